"""Real servers for the CrewAI tests, started as the main suite starts them.

The CrewAI adapter runs in its own virtualenv (``.venv-crewai``, ``scripts/test_crewai.sh``):
``crewai`` pins ``mcp`` 1.x, which the ``mcp`` extra of the main ``.venv`` cannot share.
These tests live outside ``tests`` so the main run (``testpaths = ["tests"]``) never
collects them, and reuse its server fixtures, hooks and dialect audit from
``tests.conftest`` (same environment variables, same report of the server kinds not run,
same ``CI=true`` rule).

CrewAI reports telemetry and traces over the network unless told not to; the switches
are set here, before anything imports it, and every test may only open loopback
connections (``pytest-socket``'s ``allow_hosts``, see ``test_crewai.py``).
"""

from __future__ import annotations

import os

for _switch, _value in (
    ("CREWAI_DISABLE_TELEMETRY", "true"),
    ("CREWAI_DISABLE_TRACKING", "true"),
    ("CREWAI_TRACING_ENABLED", "false"),
):
    os.environ[_switch] = _value

import pytest  # noqa: E402

from tests import conftest as _main  # noqa: E402
from tests.conftest import (  # noqa: E402
    _valkey_search_1_0_dialect,
    plain_server,
    pytest_report_header,
    pytest_terminal_summary,
    servers,
)


def pytest_configure(config: pytest.Config) -> None:
    _main.pytest_configure(config)
    # CrewAI warns about its own deprecated fields whenever an Agent or Crew is built.
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:crewai")
    config.addinivalue_line("filterwarnings", "ignore::DeprecationWarning:crewai.*")


__all__ = [
    "_valkey_search_1_0_dialect",
    "plain_server",
    "pytest_configure",
    "pytest_report_header",
    "pytest_terminal_summary",
    "servers",
]
