"""Test helpers: controllable embedders and a uniform async view of both store kinds."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

DIM = 16


def random_unit(seed_text: str, dim: int = DIM) -> list[float]:
    """A deterministic pseudo-random unit vector for a text."""
    seed = int.from_bytes(hashlib.sha256(seed_text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).normal(size=dim)
    return list(vector / np.linalg.norm(vector))


def near(base: Sequence[float], distance: float, seed: str = "x") -> list[float]:
    """A unit vector at (about) the given cosine distance from unit vector ``base``."""
    b = np.asarray(base, dtype=np.float64)
    r = np.asarray(random_unit("orth" + seed, len(b)))
    r = r - (r @ b) * b
    r /= np.linalg.norm(r)
    cos = 1.0 - distance
    v = cos * b + np.sqrt(max(0.0, 1 - cos * cos)) * r
    return list(v / np.linalg.norm(v))


class TableEmbedder:
    """Embeds texts found in ``table`` to the given vector, others deterministically."""

    def __init__(self, dim: int = DIM) -> None:
        self.dim = dim
        self.table: dict[str, list[float]] = {}
        self.calls = 0

    def set(self, text: str, vector: Sequence[float]) -> None:
        self.table[text] = list(vector)

    def __call__(self, text: str) -> list[float]:
        self.calls += 1
        return self.table.get(text) or random_unit(text, self.dim)


class AsyncTableEmbedder(TableEmbedder):
    async def __call__(self, text: str) -> list[float]:  # type: ignore[override]
        await asyncio.sleep(0)
        return super().__call__(text)


class AsyncView:
    """Call a SyncMemoryStore's methods with ``await`` (in a worker thread)."""

    def __init__(self, store: Any) -> None:
        self._store = store

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._store, name)
        if not callable(attr) or name in {"current_config"}:
            return attr

        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(attr, *args, **kwargs)

        return call

    @property
    def wrapped(self) -> Any:
        return self._store


Factory = Callable[..., Any]


async def raw_command(store: Any, *args: Any) -> Any:
    """Send one command through a test store's client (async or blocking, or the store
    behind an ``AsyncView``): what another writer, or damage, does to the server."""
    client = getattr(store, "wrapped", store).client
    result = client.execute_command(*args)
    return await result if hasattr(result, "__await__") else result


class CountingExecutor:
    """Wraps a store's executor (async or blocking) and counts its round trips: each
    command or batch sent is one (what it returns, a value or an awaitable, passes
    through)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.round_trips = 0

    def command(self, cmd: Any) -> Any:
        self.round_trips += 1
        return self.inner.command(cmd)

    def batch(self, batch: Any) -> Any:
        self.round_trips += 1
        return self.inner.batch(batch)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def count_round_trips(store: Any) -> CountingExecutor:
    """Make a test store (or the store behind an ``AsyncView``) count its round trips."""
    raw = getattr(store, "wrapped", store)
    counting = CountingExecutor(raw._executor)
    raw._executor = counting
    return counting


def record_async_round_trips(monkeypatch: Any) -> list[list[str]]:
    """Every round trip any asyncio executor makes from now on, as its command names
    (for adapters that build their executors themselves)."""
    from agent_memory.core import clients

    sent: list[list[str]] = []
    batch, command = clients.AsyncExecutor.batch, clients.AsyncExecutor.command

    async def counted_batch(self: Any, b: Any) -> Any:
        sent.append([c.name.upper() for c in b.commands])
        return await batch(self, b)

    async def counted_command(self: Any, cmd: Any) -> Any:
        sent.append([cmd.name.upper()])
        return await command(self, cmd)

    monkeypatch.setattr(clients.AsyncExecutor, "batch", counted_batch)
    monkeypatch.setattr(clients.AsyncExecutor, "command", counted_command)
    return sent
