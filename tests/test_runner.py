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
    loop = id(asyncio.get_running_loop())
    before = runner._running.get(loop, 0)
    await asyncio.gather(
        run_async(_paused_steps(log, "a"), executor), run_async(_paused_steps(log, "b"), executor)
    )
    assert log == ["a0", "b0", "a1", "b1", "a2", "b2"]
    assert runner._running.get(loop, 0) == before  # neither is counted in flight any more


def _pause_between(log: list[str]) -> Operation[tuple[list[str], bool]]:
    """What had run when the pause returned, and whether the pause said the loop is shared."""
    asyncio.get_running_loop().call_soon(log.append, "other")
    shared = yield from pause()
    return list(log), shared


def _executor() -> AsyncExecutor:
    return AsyncExecutor(AsyncInProcessClient(Keyspace()))


async def run_async_fresh(op: Operation[Any]) -> Any:
    return await run_async(op, _executor())


# These run on a fresh event loop each (asyncio.run): the session's shared test loop may
# carry another test's background operation, which would count as sharing it.


def test_a_lone_operation_keeps_the_loop_through_a_short_pause(monkeypatch: Any) -> None:
    """Alone on the loop, an operation skips a pause (a loop iteration for nobody)."""
    monkeypatch.setattr(runner, "LONE_TURN_SECONDS", 60.0)

    async def main() -> tuple[tuple[list[str], bool], list[str]]:
        log: list[str] = []
        result = await run_async(_pause_between(log), _executor())
        await asyncio.sleep(0)
        return result, log

    assert asyncio.run(main()) == (([], False), ["other"])


def test_a_lone_operation_pauses_once_it_has_held_the_loop_long_enough(
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(runner, "LONE_TURN_SECONDS", 0.0)
    outcome = asyncio.run(run_async_fresh(_pause_between([])))
    assert outcome == (["other"], False)


def test_an_operation_pauses_for_another_one_in_flight(monkeypatch: Any) -> None:
    monkeypatch.setattr(runner, "LONE_TURN_SECONDS", 60.0)

    async def main() -> tuple[list[str], bool]:
        executor = _executor()
        other = asyncio.create_task(run_async(sleep(0.05), executor))
        await asyncio.sleep(0)  # the other operation is under way, waiting on its timer
        outcome: tuple[list[str], bool] = await run_async(_pause_between([]), executor)
        await other
        return outcome

    assert asyncio.run(main()) == (["other"], True)


def test_failed_and_cancelled_operations_are_no_longer_counted_in_flight() -> None:
    def failing() -> Operation[None]:
        yield from pause()
        raise ValueError("boom")

    async def main() -> tuple[int, int, int]:
        loop = id(asyncio.get_running_loop())
        executor = _executor()
        with pytest.raises(ValueError, match="boom"):
            await run_async(failing(), executor)
        after_failure = runner._running.get(loop, 0)
        sleeper = asyncio.create_task(run_async(sleep(10.0), executor))
        await asyncio.sleep(0)
        during = runner._running.get(loop, 0)
        sleeper.cancel()
        with pytest.raises(asyncio.CancelledError):
            await sleeper
        return after_failure, during, runner._running.get(loop, 0)

    assert asyncio.run(main()) == (0, 1, 0)


def test_pause_costs_the_blocking_runner_nothing(monkeypatch: Any) -> None:
    slept: list[float] = []
    monkeypatch.setattr(runner.time, "sleep", slept.append)
    log: list[str] = []
    run_sync(_paused_steps(log, "a"), SyncExecutor(InProcessClient(Keyspace())))
    assert log == ["a0", "a1", "a2"] and slept == [0.001]  # the pauses slept nothing
