"""The adapters' examples run offline against a real server (``AGENT_MEMORY_URL``) and
print what their docstrings promise."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import _Servers

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
PROMISES = {
    "langchain_cache.py": ["async, cached: Lyon. (stored by the blocking call above)"],
    "openai_agents_memory.py": ["[conversation-2] assistant: From memory: User prefers dark mode"],
    "adk_memory.py": ["assistant: Enjoy the Alps, Ada.", "bob sees 0 of Ada's memories"],
}


@pytest.mark.parametrize("example", sorted(PROMISES))
def test_example_runs_and_keeps_its_promise(example: str, servers: _Servers) -> None:
    url = servers.get("valkey").url
    env = {**os.environ, "AGENT_MEMORY_URL": url}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / example)],
        capture_output=True,
        text=True,
        timeout=180,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    for line in PROMISES[example]:
        assert line in done.stdout, done.stdout[-2000:]
