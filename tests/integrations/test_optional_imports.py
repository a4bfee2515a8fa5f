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
        framework = ("mcp", "langgraph", "langchain_core", "agents", "google.adk", "pydantic_ai", "llama_index",
                     "crewai")
        loaded = sorted(m for m in framework if m in sys.modules)
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


def test_every_adapter_package_names_its_extra_when_its_framework_is_missing() -> None:
    out = _python(
        """
        import importlib, sys
        from agent_memory.errors import CapabilityError
        cases = [
            ("agent_memory.integrations.checkpoint", "langgraph", "langgraph"),
            ("agent_memory.integrations.langchain", "langchain_core", "langchain"),
            ("agent_memory.integrations.openai_agents", "agents", "openai-agents"),
            ("agent_memory.integrations.adk", "google.adk", "adk"),
            ("agent_memory.integrations.pydantic_ai", "pydantic_ai", "pydantic-ai"),
            ("agent_memory.integrations.llama_index", "llama_index", "llama-index"),
            ("agent_memory.integrations.crewai", "crewai", "crewai"),
        ]
        for module, framework, extra in cases:
            saved = {k: v for k, v in sys.modules.items() if k == framework or k.startswith(framework + ".")}
            for name in saved:
                del sys.modules[name]
            sys.modules[framework] = None  # as if not installed
            try:
                importlib.import_module(module)
                print(module, "imported")
            except CapabilityError as exc:
                print(module, f"agent-memory[{extra}]" in str(exc))
            finally:
                del sys.modules[framework]
                sys.modules.update(saved)
        """
    )
    assert out.splitlines() == [
        "agent_memory.integrations.checkpoint True",
        "agent_memory.integrations.langchain True",
        "agent_memory.integrations.openai_agents True",
        "agent_memory.integrations.adk True",
        "agent_memory.integrations.pydantic_ai True",
        "agent_memory.integrations.llama_index True",
        "agent_memory.integrations.crewai True",
    ]
