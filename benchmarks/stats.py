"""Latency samples, percentiles and interleaved ratios."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in 0..100) of a non-empty list."""
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, round(q / 100 * len(ordered) + 0.5) - 1))
    return ordered[rank]


async def p50_of_calls(call: Callable[[], Awaitable[Any]], calls: int) -> float:
    """The median wall time in ms of ``calls`` awaited calls of ``call``, one at a time."""
    samples = []
    for _ in range(calls):
        began = time.perf_counter()
        await call()
        samples.append((time.perf_counter() - began) * 1000)
    return percentile(samples, 50)


@dataclass
class Samples:
    """Per-operation latencies (seconds) of one system in one scenario, by round."""

    rounds: list[list[float]] = field(default_factory=list)
    walls: list[float] = field(default_factory=list)  # wall time of each round
    items_per_op: int = 1

    def add(self, latencies: list[float], wall: float) -> None:
        self.rounds.append(latencies)
        self.walls.append(wall)

    @property
    def all(self) -> list[float]:
        return [x for r in self.rounds for x in r]

    def round_medians(self) -> list[float]:
        return [statistics.median(r) for r in self.rounds if r]

    def round_throughputs(self) -> list[float]:
        """Items per second of each round (ops x items_per_op / wall)."""
        return [
            len(r) * self.items_per_op / w
            for r, w in zip(self.rounds, self.walls, strict=True)
            if w > 0
        ]

    def summary(self) -> dict[str, Any]:
        values = self.all
        return {
            "n": len(values),
            "rounds": len(self.rounds),
            "p50_ms": statistics.median(values) * 1000,
            "p95_ms": percentile(values, 95) * 1000,
            "p99_ms": percentile(values, 99) * 1000,
            "throughput_per_s": statistics.median(self.round_throughputs()),
        }


def ratio(a: Samples, b: Samples) -> float:
    """Median over rounds of (round median of ``a``) / (round median of ``b``).

    Rounds were interleaved, so each quotient compares runs made moments apart.
    """
    pairs = zip(a.round_medians(), b.round_medians(), strict=False)
    return statistics.median(x / y for x, y in pairs if y > 0)


def throughput_ratio(a: Samples, b: Samples) -> float:
    """Median over rounds of throughput(a) / throughput(b)."""
    pairs = zip(a.round_throughputs(), b.round_throughputs(), strict=False)
    return statistics.median(x / y for x, y in pairs if y > 0)
