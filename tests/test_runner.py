"""The async runner never runs a blocking user callback on the event loop, and pauses
let concurrent operations take turns."""

from __future__ import annotations

import asyncio
import functools
import threading
from typing import Any

import pytest

from agent_memory import MemoryStore
from agent_memory.backends.inprocess import AsyncInProcessClient, InProcessClient, Keyspace
from agent_memory.core import runner
from agent_memory.core.clients import AsyncExecutor, SyncExecutor
from agent_memory.core.effects import Operation, pause, sleep
from agent_memory.core.runner import call_off_loop, is_async_callable, run_async, run_sync
from tests.support import AsyncTableEmbedder, TableEmbedder


class _ThreadRecorder(TableEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def __call__(self, text: str) -> list[float]:
        self.threads.add(threading.get_ident())
        return super().__call__(text)


async def _coro_fn(x: int) -> int:
    return x + 1


class _AsyncCallable:
    async def __call__(self, x: int) -> int:
        return x + 2


def test_async_callables_are_recognised() -> None:
    assert is_async_callable(_coro_fn)
    assert is_async_callable(functools.partial(_coro_fn, 1))
    assert is_async_callable(_AsyncCallable())
    assert is_async_callable(AsyncTableEmbedder())
    assert not is_async_callable(TableEmbedder())
    assert not is_async_callable(len)
    assert not is_async_callable(lambda x: x)


async def test_call_off_loop_runs_sync_callbacks_in_a_worker_thread() -> None:
    loop_thread = threading.get_ident()
    seen: list[int] = []

    def blocking(x: int) -> int:
        seen.append(threading.get_ident())
        return x * 2

    assert await call_off_loop(blocking, 21) == 42
    assert seen and seen[0] != loop_thread
    assert await call_off_loop(_coro_fn, 1) == 2
    assert await call_off_loop(_AsyncCallable(), 1) == 3
    # A sync function returning an awaitable: the awaitable is awaited on the loop.
    assert await call_off_loop(lambda: _coro_fn(4)) == 5


async def test_store_embedder_runs_off_the_event_loop() -> None:
    embed = _ThreadRecorder()
    store = MemoryStore(AsyncInProcessClient(Keyspace()), "loop", embed)
    await store.remember("the user likes tea")
    await store.recall("what does the user drink?")
    assert embed.threads and threading.get_ident() not in embed.threads


async def test_a_slow_sync_embedder_does_not_stall_other_coroutines() -> None:
    """While eight recalls wait for a blocking embedder, the loop keeps serving a ticker."""
    release = threading.Event()

    class Gated(TableEmbedder):
        def __call__(self, text: str) -> Any:
            if text.startswith("query"):
                release.wait(5)
            return super().__call__(text)

    store = MemoryStore(AsyncInProcessClient(Keyspace()), "loop2", Gated(), default_threshold=2.0)
    await store.remember("a note")
    recalls = [asyncio.create_task(store.recall(f"query {i}")) for i in range(8)]
    ticks = 0
    for _ in range(20):
        await asyncio.sleep(0.001)
        ticks += 1
    # Every embedder call is still blocked, yet the loop ran the ticker to the end.
    assert not any(t.done() for t in recalls)
    assert ticks == 20
    release.set()
    results = await asyncio.gather(*recalls)
    assert all(r.selection_id for r in results)


def _paused_steps(log: list[str], name: str) -> Operation[None]:
    yield from sleep(0.001)  # like a round trip: both operations are under way after it
    for step in range(3):
        log.append(f"{name}{step}")
        yield from pause()


async def test_pause_lets_other_tasks_take_turns() -> None:
    """Two operations with pauses interleave step by step on one event loop."""
    log: list[str] = []
    executor = AsyncExecutor(AsyncInProcessClient(Keyspace()))
    await asyncio.gather(
        run_async(_paused_steps(log, "a"), executor), run_async(_paused_steps(log, "b"), executor)
    )
    assert log == ["a0", "b0", "a1", "b1", "a2", "b2"]
    assert id(asyncio.get_running_loop()) not in runner._running  # nothing left in flight


def _pause_between(log: list[str]) -> Operation[tuple[list[str], bool]]:
    """What had run when the pause returned, and whether the pause said the loop is shared."""
    asyncio.get_running_loop().call_soon(log.append, "other")
    shared = yield from pause()
    return list(log), shared


async def test_a_lone_operation_keeps_the_loop_through_a_short_pause() -> None:
    """Alone on the loop, an operation skips a pause (a loop iteration for nobody)."""
    log: list[str] = []
    executor = AsyncExecutor(AsyncInProcessClient(Keyspace()))
    assert await run_async(_pause_between(log), executor) == ([], False)
    await asyncio.sleep(0)
    assert log == ["other"]


async def test_a_lone_operation_pauses_once_it_has_held_the_loop_long_enough(
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(runner, "LONE_TURN_SECONDS", 0.0)
    executor = AsyncExecutor(AsyncInProcessClient(Keyspace()))
    assert await run_async(_pause_between([]), executor) == (["other"], False)


async def test_an_operation_pauses_for_another_one_in_flight() -> None:
    executor = AsyncExecutor(AsyncInProcessClient(Keyspace()))
    other = asyncio.create_task(run_async(sleep(0.05), executor))
    await asyncio.sleep(0)  # the other operation is under way, waiting on its timer
    assert await run_async(_pause_between([]), executor) == (["other"], True)
    await other


async def test_a_failed_operation_is_no_longer_counted_in_flight() -> None:
    def failing() -> Operation[None]:
        yield from pause()
        raise ValueError("boom")

    executor = AsyncExecutor(AsyncInProcessClient(Keyspace()))
    with pytest.raises(ValueError, match="boom"):
        await run_async(failing(), executor)
    assert id(asyncio.get_running_loop()) not in runner._running


def test_pause_costs_the_blocking_runner_nothing(monkeypatch: Any) -> None:
    slept: list[float] = []
    monkeypatch.setattr(runner.time, "sleep", slept.append)
    log: list[str] = []
    run_sync(_paused_steps(log, "a"), SyncExecutor(InProcessClient(Keyspace())))
    assert log == ["a0", "a1", "a2"] and slept == [0.001]  # the pauses slept nothing
