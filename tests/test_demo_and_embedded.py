"""The README's first command (the demo on the embedded server) works end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from agent_memory.embedded.server import open_embedded

ROOT = Path(__file__).resolve().parent.parent


def test_demo_runs_on_the_embedded_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    result = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli.main", "--path", str(data), "--json", "demo"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["remembered"] == 8
    assert report["backend"] == "ft"
    top = {r["question"]: [h["content"] for h in r["hits"]] for r in report["recalls"]}
    assert top["which colour theme does the user like?"][0].startswith("The user prefers dark mode")
    assert top["when do we ship to production?"][0].startswith("Deploys to production")
    assert top["can I recommend a peanut butter cookie recipe?"][0].startswith("Ada is allergic")
    assert top["what is the weather on Mars?"] == []
    consolidation = report["consolidation"]
    assert consolidation["summarised"] == 2
    assert consolidation["memories_after"] == consolidation["memories_before"] - 1
    assert "Deploys to production" in consolidation["summary"]
    # The demo stopped the server it started and persisted its data.
    assert not (data / "server.json").exists()
    assert (data / "appendonlydir").is_dir()
    # The other commands, with their defaults, see what the demo wrote.
    listed = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli.main", "--path", str(data), "--json", "list",
         "--namespace", "demo"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout)["total"] == consolidation["memories_after"]


def test_second_opener_reuses_the_running_server(tmp_path: Path) -> None:
    first = open_embedded(tmp_path)
    try:
        assert first.owned and first.has_search
        second = open_embedded(tmp_path)
        assert second.url == first.url and not second.owned
        second.stop()  # not the owner: a no-op
        assert first.process is not None and first.process.alive()
    finally:
        first.stop()
    pid_file = tmp_path / "server.json"
    assert not pid_file.exists()
    restarted = open_embedded(tmp_path)
    try:
        assert restarted.owned and restarted.url != "" and os.path.isdir(tmp_path / "appendonlydir")
    finally:
        restarted.stop()
