"""A writer and a recaller kept running against a store while a fault test breaks its
server, and the check that every acknowledged write survived."""

from __future__ import annotations

import asyncio
from types import TracebackType
from typing import Any

from agent_memory import AgentMemoryError, OperationTimeoutError, ServerUnavailableError
from tests.support import random_unit

OUTAGE_ERRORS = (ServerUnavailableError, OperationTimeoutError)


def not_outage_errors(failures: list[BaseException]) -> list[str]:
    """The failures that are not what a call meets when its server is down: refused or
    dropped connections, or a socket timeout for a call already in flight when the
    server died (a server in the middle of an fsync can take seconds to die)."""
    return [repr(f) for f in failures if not isinstance(f, OUTAGE_ERRORS)]


class WriteRecallLoad:
    """Writes numbered memories and recalls one of them until stopped, recording what
    was acknowledged and what failed (a failed call backs off ``backoff`` seconds).

    Use it as ``async with``: the load stops when the block ends, also when the test
    fails inside it (left running, it would keep calling into later tests)."""

    def __init__(self, store: Any, *, backoff: float = 0.02) -> None:
        self.store = store
        self.backoff = backoff
        self.acked: dict[str, str] = {}  # memory id -> text, for every remember that returned
        self.failures: list[BaseException] = []
        self.recalled: list[int] = []  # hits per successful recall
        self.recall_failures: list[BaseException] = []
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._write()), asyncio.create_task(self._recall())]

    async def until_acked(self, count: int) -> None:
        """Wait until ``count`` writes were acknowledged in all."""
        while len(self.acked) < count:
            await asyncio.sleep(0.001)

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)

    async def __aenter__(self) -> WriteRecallLoad:
        self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _write(self) -> None:
        i = 0
        while not self._stop.is_set():
            text = f"memory number {i}"
            i += 1
            try:
                self.acked[await self.store.remember(text)] = text
            except AgentMemoryError as exc:
                self.failures.append(exc)
                await asyncio.sleep(self.backoff)

    async def _recall(self) -> None:
        while not self._stop.is_set():
            try:
                hits = await self.store.recall("memory number 1", reinforce=False)
                self.recalled.append(len(hits))
            except AgentMemoryError as exc:
                self.recall_failures.append(exc)
                await asyncio.sleep(self.backoff)


async def assert_read_back(store: Any, acked: dict[str, str]) -> None:
    """Every acknowledged memory is there, with its text."""
    for memory_id, text in acked.items():
        item = await store.get(memory_id)
        assert item is not None and item.content == text, memory_id


async def assert_recalled(store: Any, acked: dict[str, str], *, within: float = 0.0) -> None:
    """Every acknowledged memory is the nearest hit of its own vector; ``within``: the
    seconds a cluster may take before every shard answers again (a restarted node can be
    left out of fanned-out searches for a moment: README "Cluster"), after which any
    memory still missing fails the test."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        missing = []
        for memory_id, text in acked.items():
            hits = await store.recall_by_vector(random_unit(text), k=1, reinforce=False)
            if [h.item.id for h in hits] != [memory_id]:
                missing.append(text)
        if not missing:
            return
        assert loop.time() < deadline, f"not recalled: {missing[:5]} ({len(missing)})"
        await asyncio.sleep(0.5)
