"""Speed scenarios, run interleaved: library, floor and peer alternate round by round."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from benchmarks.peer import Peer
from benchmarks.stats import Samples, ratio, throughput_ratio
from benchmarks.systems import Bench

CONC = 8


@dataclass(frozen=True)
class Scenario:
    name: str  # operation name understood by Bench and the peer worker
    label: str
    ops: int  # operations per round
    conc: int = 1
    items: int = 1  # items per operation (throughput in items/s)
    peer_note: str | None = None  # why the peer cannot do it (no peer column)

    @property
    def key(self) -> str:
        return self.name if self.conc == 1 else f"{self.name}@{self.conc}"

    @property
    def is_sync(self) -> bool:
        return self.name.startswith("sync_")


NO_SYNC = "the peer has no blocking API"
SCENARIOS = (
    Scenario("recall", "recall k=8, reinforce off", 40),
    Scenario("recall", "recall k=8, reinforce off", 80, conc=CONC),
    Scenario("recall_reinforce", "recall k=8, reinforce on", 40),
    Scenario(
        "recall_nolex",
        "recall k=8, no lexical match (a query sharing no word with any memory)",
        40,
        peer_note="the earlier scenario, kept for the library only",
    ),
    Scenario("recall_scoped", "recall k=8, scoped to an agent", 40),
    Scenario(
        "recall_session",
        "recall k=8, session-merged",
        40,
        peer_note="the peer has no session scope",
    ),
    Scenario("recall_by_vector", "recall_by_vector k=8", 40),
    Scenario("recall_by_vector", "recall_by_vector k=8", 80, conc=CONC),
    Scenario("sync_recall", "SyncMemoryStore.recall (threads)", 40, peer_note=NO_SYNC),
    Scenario("sync_recall", "SyncMemoryStore.recall (threads)", 80, conc=CONC, peer_note=NO_SYNC),
    Scenario("remember", "remember", 40),
    Scenario("remember", "remember", 80, conc=CONC),
    Scenario("sync_remember", "SyncMemoryStore.remember (threads)", 40, peer_note=NO_SYNC),
    Scenario(
        "sync_remember", "SyncMemoryStore.remember (threads)", 80, conc=CONC, peer_note=NO_SYNC
    ),
    Scenario("remember_many", "remember_many of 100", 3, items=100),
    Scenario("llm_check", "LlmCache.check (hit)", 100),
    Scenario("llm_check", "LlmCache.check (hit)", 200, conc=CONC),
    Scenario("llm_store", "LlmCache.store", 100),
    Scenario("tool_check", "ToolCache.check (hit)", 100),
    Scenario("tool_store", "ToolCache.store", 100),
)
FORGET = Scenario("forget_by_scope", "forget_by_scope of 1,000", 1, items=1000)
PEER_BATCH_NOTE = "peer has no batch API: 100 x remember via asyncio.gather"


async def _run_async(ops: list[Callable[[], Any]], conc: int) -> tuple[list[float], float]:
    latencies: list[float] = []
    queue = list(reversed(ops))

    async def caller() -> None:
        while queue:
            op = queue.pop()
            began = time.perf_counter()
            await op()
            latencies.append(time.perf_counter() - began)

    began = time.perf_counter()
    await asyncio.gather(*(caller() for _ in range(conc)))
    return latencies, time.perf_counter() - began


def _run_threads(
    ops: list[Callable[[], Any]], conc: int, pool: ThreadPoolExecutor
) -> tuple[list[float], float]:
    def timed(op: Callable[[], Any]) -> float:
        began = time.perf_counter()
        op()
        return time.perf_counter() - began

    began = time.perf_counter()
    latencies = [timed(op) for op in ops] if conc == 1 else list(pool.map(timed, ops))
    return latencies, time.perf_counter() - began


class Runner:
    """Runs scenarios on one :class:`Bench` (and optionally one :class:`Peer`)."""

    def __init__(self, bench: Bench, peer: Peer | None, rounds: int, scale: float = 1.0) -> None:
        self.bench = bench
        self.peer = peer
        self.rounds = rounds
        self.scale = scale
        self.pool = ThreadPoolExecutor(max_workers=CONC)

    def close(self) -> None:
        self.pool.shutdown()

    def _ops(self, sc: Scenario) -> int:
        return max(1, round(sc.ops * self.scale)) if sc.items == 1 else sc.ops

    async def _local(self, system: str, sc: Scenario, round_no: int) -> tuple[list[float], float]:
        n = self._ops(sc)
        indexes = range(round_no * n, round_no * n + n)
        await self.bench.prepare(sc.name, indexes)
        make = self.bench.library_op if system == "library" else self.bench.floor_op
        ops = [make(sc.name, i) for i in indexes]
        if sc.is_sync:
            return _run_threads(ops, sc.conc, self.pool)
        return await _run_async(ops, sc.conc)

    async def run(self, sc: Scenario) -> dict[str, Any]:
        systems = ["library", "floor"]
        if self.peer is not None and sc.peer_note is None:
            systems.append("peer")
        samples = {s: Samples(items_per_op=sc.items) for s in systems}
        for round_no in range(-1, self.rounds):  # round -1 warms up, untimed
            order = systems[round_no % len(systems) :] + systems[: round_no % len(systems)]
            for system in order:
                if system == "peer":
                    assert self.peer is not None
                    reply = self.peer.run(sc.name, self._ops(sc), round_no + 1000, sc.conc)
                    lat, wall = reply["lat"], reply["wall"]
                else:
                    lat, wall = await self._local(system, sc, round_no + 1000)
                if round_no >= 0:
                    samples[system].add(lat, wall)
        return self._result(sc, samples)

    async def run_forget(self) -> dict[str, Any]:
        systems = ["library", "floor"] + (["peer"] if self.peer is not None else [])
        samples = {s: Samples(items_per_op=1000) for s in systems}
        for round_no in range(self.rounds):
            order = systems[round_no % len(systems) :] + systems[: round_no % len(systems)]
            for system in order:
                if system == "peer":
                    assert self.peer is not None
                    reply = self.peer.run("forget_by_scope", 1, round_no, 1)
                    samples[system].add(reply["lat"], reply["wall"])
                    continue
                thread = f"forget{system}{round_no}"
                await self.bench.forget_setup(thread)
                forget = (
                    self.bench.library_forget if system == "library" else self.bench.floor_forget
                )
                removed, took = await forget(thread)
                if removed != 1000:
                    raise RuntimeError(f"{system} forgot {removed} memories, expected 1000")
                samples[system].add([took], took)
        return self._result(FORGET, samples)

    def _result(self, sc: Scenario, samples: dict[str, Samples]) -> dict[str, Any]:
        out: dict[str, Any] = {
            "scenario": sc.name,
            "label": sc.label,
            "concurrency": sc.conc,
            "items_per_op": sc.items,
            "systems": {s: v.summary() for s, v in samples.items()},
            "library_vs_floor": ratio(samples["library"], samples["floor"]),
        }
        if "peer" in samples:
            out["library_vs_peer"] = ratio(samples["library"], samples["peer"])
            out["throughput_library_vs_peer"] = throughput_ratio(
                samples["library"], samples["peer"]
            )
            if sc.name == "remember_many":
                out["peer_note"] = PEER_BATCH_NOTE
        else:
            out["peer_note"] = sc.peer_note or "peers not run"
        out["throughput_library_vs_floor"] = throughput_ratio(samples["library"], samples["floor"])
        return out
