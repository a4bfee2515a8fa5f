"""The README's "Using it" script runs as is, against a server of one's own and on the
embedded server it starts itself."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ServerInfo

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "quickstart.py"


def _run(cwd: Path, url: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "AGENT_MEMORY_URL"}
    if url is not None:
        env["AGENT_MEMORY_URL"] = url
    return subprocess.run(
        [sys.executable, str(SCRIPT)], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=120, check=False,
    )  # fmt: skip


def test_quickstart_runs_against_a_url(any_server: ServerInfo, tmp_path: Path) -> None:
    result = _run(tmp_path, any_server.url)
    assert result.returncode == 0, result.stderr
    assert "User prefers dark mode" in result.stdout.splitlines()[0]
    assert "LLM cache hit: False" in result.stdout


def test_quickstart_runs_on_the_embedded_server(tmp_path: Path) -> None:
    result = _run(tmp_path, None)
    assert result.returncode == 0, result.stderr
    assert "User prefers dark mode" in result.stdout
    assert (tmp_path / "agent-memory-data").is_dir()
