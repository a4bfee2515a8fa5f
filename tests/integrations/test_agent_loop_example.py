"""``examples/agent_loop.py`` runs offline and does what its docstring says."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent_loop.py"


def test_agent_loop_recalls_saves_refuses_and_completes() -> None:
    turns = runpy.run_path(str(EXAMPLE))["run"]()
    first, save, foreign, answer = turns
    assert first.recalled == [] and "don't know" in first.answer
    assert save.answer == "Noted."
    assert "cannot be chosen by the model" in foreign.answer
    assert answer.recalled == ["my favourite editor theme is solarized dark"]
    assert "solarized" in answer.answer
    assert answer.score == 1.0
    assert answer.completed is True  # the recall's selection took the eval outcome


def test_agent_loop_tool_definitions() -> None:
    namespace = runpy.run_path(str(EXAMPLE))
    from agent_memory import SyncMemoryStore, memory_tool
    from agent_memory.backends.inprocess import InProcessClient, Keyspace
    from agent_memory.embedders import HashingEmbedder

    store = SyncMemoryStore(InProcessClient(Keyspace()), "defs", HashingEmbedder())
    scope = namespace["SCOPE"]
    tool = memory_tool(store, namespace=scope.namespace, session_id=scope.session_id)
    openai, anthropic = tool.to_openai(), tool.to_anthropic()
    assert openai["function"]["parameters"] == anthropic["input_schema"]
    assert "namespace" not in anthropic["input_schema"]["properties"]


def test_agent_loop_runs_as_a_script() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=60, check=True
    )
    assert "From memory: my favourite editor theme is solarized dark" in done.stdout
    assert "selection completed: True" in done.stdout
