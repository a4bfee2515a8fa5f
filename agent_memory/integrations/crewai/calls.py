"""The effects of the CrewAI storage's operations, and their two runners.

An operation (:mod:`.ops`) is a generator that yields :class:`StoreCall` values (a method
of the memory store and its arguments), receives each call's result, and returns what
the CrewAI method returns. The store methods it names exist with the same signature on
:class:`~agent_memory.MemoryStore` and :class:`~agent_memory.SyncMemoryStore`, so one
operation serves both: :func:`run_sync` runs it on the blocking store, :func:`run_async`
on the asyncio one. A store error ends the operation (it is closed) and reaches the
caller as it is: an :mod:`agent_memory.errors` exception.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agent_memory.store.memory_store import MemoryStore
from agent_memory.store.sync_store import SyncMemoryStore

T = TypeVar("T")

#: The store methods an operation may call.
METHODS = frozenset(
    {"ensure_index", "import_records", "recall_by_vector", "list", "get", "get_many",
     "forget_by_scope", "report_corrupt_record", "_forget_judged"}
)  # fmt: skip
#: The store methods among them that are not coroutines on the asyncio store.
_BLOCKING_ON_BOTH = frozenset({"report_corrupt_record"})


@dataclass(frozen=True, slots=True)
class StoreCall:
    """One call of a memory-store method: ``store.<method>(*args, **kwargs)``."""

    method: str
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"not a store method an operation may call: {self.method!r}")


#: An operation: yields store calls, receives their results, returns ``T``.
Plan = Generator[StoreCall, Any, T]


def run_sync(store: SyncMemoryStore, plan: Plan[T]) -> T:
    """Run ``plan`` on a blocking store; returns its value, raises what it raises."""
    try:
        call = next(plan)
        while True:
            call = plan.send(getattr(store, call.method)(*call.args, **call.kwargs))
    except StopIteration as done:
        value: T = done.value
        return value
    finally:
        plan.close()


async def run_async(store: MemoryStore, plan: Plan[T]) -> T:
    """Run ``plan`` on an asyncio store; returns its value, raises what it raises."""
    try:
        call = next(plan)
        while True:
            result = getattr(store, call.method)(*call.args, **call.kwargs)
            if call.method not in _BLOCKING_ON_BOTH:
                result = await result
            call = plan.send(result)
    except StopIteration as done:
        value: T = done.value
        return value
    finally:
        plan.close()


__all__ = ["METHODS", "Plan", "StoreCall", "run_async", "run_sync"]
