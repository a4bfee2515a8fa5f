"""Worker processes of the concurrency tests (a module of its own so that the
``spawn`` start method can import it)."""

from __future__ import annotations

import asyncio
import threading
from collections import Counter
from dataclasses import dataclass, field

from agent_memory import MemoryStore, Scope, SyncMemoryStore
from tests.support import TableEmbedder


@dataclass
class Tally:
    """What one worker observed; the parent sums these and compares with the server."""

    remembered: list[str] = field(default_factory=list)
    forgotten: list[str] = field(default_factory=list)
    recalls: int = 0
    returned: Counter[str] = field(default_factory=Counter)
    errors: list[str] = field(default_factory=list)

    def merge(self, other: Tally) -> None:
        self.remembered += other.remembered
        self.forgotten += other.forgotten
        self.recalls += other.recalls
        self.returned.update(other.returned)
        self.errors += other.errors


@dataclass(frozen=True)
class Job:
    url: str
    name: str
    worker: int
    mode: str  # "async" (coroutines) or "sync" (threads)
    lanes: int
    rounds: int
    scope: Scope | None = None
    cap: int | None = None
    recall: bool = True
    forget_every: int = 4


def _text(job: Job, lane: int, i: int) -> str:
    return f"w{job.worker} lane{lane} item{i}"


async def _async_lane(store: MemoryStore, job: Job, lane: int, tally: Tally) -> None:
    mine: list[str] = []
    for i in range(job.rounds):
        try:
            mine.append(await store.remember(_text(job, lane, i), scope=job.scope))
            tally.remembered.append(mine[-1])
            if job.recall:
                hits = await store.recall(_text(job, lane, i), scope=job.scope, k=5, threshold=2.0)
                tally.recalls += 1
                tally.returned.update(h.item.id for h in hits)
            if job.forget_every and i % job.forget_every == job.forget_every - 1:
                victim = mine.pop(0)
                if await store.forget(victim):
                    tally.forgotten.append(victim)
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which fails
            tally.errors.append(repr(exc))


def _sync_lane(store: SyncMemoryStore, job: Job, lane: int, tally: Tally) -> None:
    mine: list[str] = []
    for i in range(job.rounds):
        try:
            mine.append(store.remember(_text(job, lane, i), scope=job.scope))
            tally.remembered.append(mine[-1])
            if job.recall:
                hits = store.recall(_text(job, lane, i), scope=job.scope, k=5, threshold=2.0)
                tally.recalls += 1
                tally.returned.update(h.item.id for h in hits)
            if job.forget_every and i % job.forget_every == job.forget_every - 1:
                victim = mine.pop(0)
                if store.forget(victim):
                    tally.forgotten.append(victim)
        except Exception as exc:  # noqa: BLE001 - reported to the parent, which fails
            tally.errors.append(repr(exc))


async def _run_async(job: Job) -> Tally:
    store = MemoryStore.from_url(
        job.url, name=job.name, embed=TableEmbedder(), max_items_per_scope=job.cap
    )
    tallies = [Tally() for _ in range(job.lanes)]
    await asyncio.gather(*(_async_lane(store, job, n, t) for n, t in enumerate(tallies)))
    await store.close()
    total = Tally()
    for t in tallies:
        total.merge(t)
    return total


def _run_sync(job: Job) -> Tally:
    store = SyncMemoryStore.from_url(
        job.url, name=job.name, embed=TableEmbedder(), max_items_per_scope=job.cap
    )
    tallies = [Tally() for _ in range(job.lanes)]
    threads = [
        threading.Thread(target=_sync_lane, args=(store, job, n, t)) for n, t in enumerate(tallies)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    store.close()
    total = Tally()
    for t in tallies:
        total.merge(t)
    return total


def run(job: Job) -> Tally:
    """Entry point of a worker process."""
    return asyncio.run(_run_async(job)) if job.mode == "async" else _run_sync(job)
