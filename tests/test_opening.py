"""Opening: a blocking start run off the event loop, awaited or used as ``async with``."""

from __future__ import annotations

import asyncio
import logging
import threading

import pytest

from agent_memory.errors import InvalidInputError
from agent_memory.facade.opening import Opening, opened_now


class Resource:
    def __init__(self) -> None:
        self.thread = threading.current_thread()
        self.events: list[str] = []

    async def close(self) -> None:
        self.events.append("close")

    async def __aenter__(self) -> Resource:
        self.events.append("enter")
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self.events.append("exit")


async def test_each_await_opens_a_new_resource_in_a_worker_thread() -> None:
    opening = Opening(Resource)
    first, second = await opening, await opening
    assert first is not second
    assert first.thread is not threading.current_thread()
    assert first.events == []  # awaiting only opens


async def test_the_context_manager_enters_and_exits_what_it_opened() -> None:
    async with Opening(Resource) as resource:
        assert resource.events == ["enter"]
    assert resource.events == ["enter", "exit"]


async def test_one_async_with_block_at_a_time_uses_an_opening() -> None:
    opening = Opening(Resource)
    async with opening:
        with pytest.raises(InvalidInputError, match="already in use"):
            async with opening:
                pass
    async with opening as again:  # free once the first block is over
        assert again.events == ["enter"]


async def test_what_a_twice_cancelled_opening_started_is_closed() -> None:
    started, release = threading.Event(), threading.Event()
    opened: list[Resource] = []

    def slow_start() -> Resource:
        started.set()
        release.wait(10)
        opened.append(Resource())
        return opened[-1]

    task = asyncio.create_task(_awaited(Opening(slow_start)))
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    await asyncio.sleep(0)
    task.cancel()  # a second cancellation while it waits for the thread
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert opened and opened[0].events == ["close"]


async def test_a_start_that_fails_after_a_cancellation_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    started, release = threading.Event(), threading.Event()

    def failing_start() -> Resource:
        started.set()
        release.wait(10)
        raise OSError("no such binary")

    task = asyncio.create_task(_awaited(Opening(failing_start)))
    await asyncio.to_thread(started.wait, 10)
    task.cancel()
    release.set()
    with caplog.at_level(logging.WARNING), pytest.raises(asyncio.CancelledError):
        await task
    assert "no such binary" in caplog.text


async def _awaited(opening: Opening[Resource]) -> Resource:
    return await opening


def test_the_blocking_twin_runs_the_start_at_once() -> None:
    resource = opened_now(Resource)
    assert resource.thread is threading.current_thread()
