"""No integration dependency is needed by the core install; a missing one is named."""

from __future__ import annotations

import subprocess
import sys
import textwrap


def _python(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return done.stdout.strip()


def test_core_imports_no_integration_dependency() -> None:
    out = _python(
        """
        import sys
        import agent_memory, agent_memory.integrations
        from agent_memory.integrations import mcp  # the tool logic needs no mcp package
        loaded = sorted(m for m in ("mcp", "langgraph", "langchain_core") if m in sys.modules)
        print(loaded)
        """
    )
    assert out == "[]"


def test_missing_extras_raise_capability_error_naming_them() -> None:
    out = _python(
        """
        import sys
        sys.modules["langgraph"] = None  # as if not installed
        sys.modules["mcp"] = None
        from agent_memory.errors import CapabilityError
        try:
            import agent_memory.integrations.langgraph
        except CapabilityError as exc:
            print("langgraph:", exc)
        from agent_memory.integrations.mcp import MemoryTools, build_server
        try:
            build_server(None)
        except CapabilityError as exc:
            print("mcp:", exc)
        """
    )
    lines = out.splitlines()
    assert lines[0].startswith("langgraph:") and "agent-memory[langgraph]" in lines[0]
    assert lines[1].startswith("mcp:") and "agent-memory[mcp]" in lines[1]
