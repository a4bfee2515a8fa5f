"""The sync store is the generated twin of the async one: same methods and docs."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

from agent_memory import AgentMemory, MemoryStore, SyncAgentMemory, SyncMemoryStore

ROOT = Path(__file__).resolve().parent.parent


def test_generated_sync_files_are_up_to_date() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "unasync.py"), "--check"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def _public(cls: type) -> dict[str, object]:
    """The public methods a class defines or takes from its method groups (mixins)."""
    found: dict[str, object] = {}
    for klass in reversed(cls.__mro__[:-1]):  # object's own are no part of the API
        found.update(
            (n, m) for n, m in vars(klass).items() if not n.startswith("_") or n == "__init__"
        )
    return found


def test_sync_and_async_stores_mirror_each_other() -> None:
    for async_cls, sync_cls in ((MemoryStore, SyncMemoryStore), (AgentMemory, SyncAgentMemory)):
        _check_pair(async_cls, sync_cls)


def test_the_store_has_every_method_of_its_groups() -> None:
    public = _public(MemoryStore)
    for name in ("remember", "recall", "forget_by_scope", "consolidate", "export", "prune"):
        assert name in public, name


def _check_pair(async_cls: type, sync_cls: type) -> None:
    async_methods, sync_methods = _public(async_cls), _public(sync_cls)
    assert set(async_methods) == set(sync_methods)
    for name, method in async_methods.items():
        twin = sync_methods[name]
        if isinstance(method, (classmethod, property)):
            continue
        is_async = inspect.iscoroutinefunction(method) or inspect.isasyncgenfunction(method)
        assert is_async != inspect.iscoroutinefunction(twin) or name in {
            "__init__",
            "current_config",
            "report_corrupt_record",
            "report_truncated",
            "name",
            "client",
        }, name
        if inspect.isasyncgenfunction(method):
            assert inspect.isgeneratorfunction(twin), name
        a_params = list(inspect.signature(method).parameters)  # type: ignore[arg-type]
        s_params = list(inspect.signature(twin).parameters)  # type: ignore[arg-type]
        assert a_params == s_params, name
        assert inspect.getdoc(method) == inspect.getdoc(twin), name
