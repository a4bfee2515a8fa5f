"""Timed recall over real text: the LoCoMo turns and questions.

    AGENT_MEMORY_VALKEY_SEARCH_MODULES=../shared/servers .venv/bin/python -m \\
        benchmarks.locomo_speed --data ../shared/data/locomo --server valkey-search-1.2

Stores every turn of the LoCoMo conversations (``Speaker: utterance``, the quality
benchmark's memory text, with its cached MiniLM vector: no model time is timed) in ONE
namespace, 2,760 memories whose texts share words as conversation does (the speakers'
names are in about half of them), then asks every question (760), interleaving rounds of:

* ``recall(question, k=10)``: the default hybrid recall (reinforce off and on);
* ``recall_by_vector(vector, k=10)``: semantic only;
* the floor: one bare unfiltered ``FT.SEARCH ... KNN 10 RETURN 3`` of the same vector.

Prints p50 / p95 per system and the ratios to the floor (the store's search module is
needed for the floor: run it on an FT server kind).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import valkey.asyncio as valkey_asyncio

from agent_memory import MemoryInput, MemoryStore, Scope
from agent_memory.schema import layout as L
from benchmarks.data import LookupEmbedder
from benchmarks.quality import data as locomo
from benchmarks.quality.embedcache import embed_cached

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import test_servers

K = 10
NAME = "locomo_speed"
MINILM_THRESHOLD = 0.65  # MiniLMEmbedder.recommended_threshold, as the quality run uses


def _vectors(texts: list[str]) -> Any:
    from agent_memory.embedders import MiniLMEmbedder

    return embed_cached(MiniLMEmbedder(), texts)


async def _load(url: str, folder: Path) -> tuple[MemoryStore, Any, list[str], Any]:
    convs = locomo.load(folder)
    turns = [t for c in convs for t in c.turns]
    questions = [q.text for c in convs for q in c.questions]
    contents = [t.content() for t in turns]
    embed = LookupEmbedder()
    embed.add(contents, _vectors(contents))
    question_vectors = _vectors(questions)
    embed.add(questions, question_vectors)
    client = valkey_asyncio.Valkey.from_url(url, max_connections=16)
    store = MemoryStore(
        client,
        NAME,
        embed.aembed,
        embed_many=embed.aembed_many,
        default_threshold=MINILM_THRESHOLD,
    )
    await store.ensure_index()
    for start in range(0, len(turns), 500):
        chunk = turns[start : start + 500]
        await store.remember_many(
            [MemoryInput(t.content(), scope=Scope(namespace="locomo")) for t in chunk]
        )
    return store, client, questions, question_vectors


def _floor_args(vector: Any) -> list[Any]:
    fields = (L.F_CONTENT, L.F_IMPORTANCE, L.DISTANCE_ALIAS)
    return [
        "FT.SEARCH", L.Keys(NAME).index, f"*=>[KNN {K} @{L.F_VECTOR} $vec AS {L.DISTANCE_ALIAS}]",
        "PARAMS", "2", "vec", np.asarray(vector, dtype="<f4").tobytes(),
        "RETURN", str(len(fields)), *fields, "LIMIT", "0", str(K), "DIALECT", "2",
    ]  # fmt: skip


async def _timed(calls: list[Any]) -> list[float]:
    out = []
    for call in calls:
        began = time.perf_counter()
        await call()
        out.append(time.perf_counter() - began)
    return out


async def run(url: str, folder: Path, rounds: int) -> dict[str, list[float]]:
    store, client, questions, vectors = await _load(url, folder)
    scope = Scope(namespace="locomo")
    systems = {
        "recall (reinforce off)": lambda q, v: (
            lambda: store.recall(q, k=K, scope=scope, reinforce=False)
        ),
        "recall (reinforce on)": lambda q, v: lambda: store.recall(q, k=K, scope=scope),
        "recall_by_vector": lambda q, v: (
            lambda: store.recall_by_vector(v, k=K, scope=scope, reinforce=False)
        ),
        "bare KNN 10": lambda q, v: lambda: client.execute_command(*_floor_args(v)),
    }
    timings: dict[str, list[float]] = {name: [] for name in systems}
    per_round = max(1, len(questions) // rounds)
    try:
        for make in systems.values():  # warm-up, untimed
            await _timed([make(questions[i], vectors[i]) for i in range(20)])
        for r in range(rounds):
            part = range(r * per_round, min(len(questions), (r + 1) * per_round))
            names = list(systems)
            for name in names[r % len(names) :] + names[: r % len(names)]:
                calls = [systems[name](questions[i], vectors[i]) for i in part]
                timings[name] += await _timed(calls)
    finally:
        await store.close()
        await client.aclose()
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True, help="folder of LoCoMo *.json")
    parser.add_argument("--server", default="valkey-search-1.2")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        server = test_servers.start(args.server, Path(folder))
        try:
            timings = asyncio.run(run(server.url, args.data, args.rounds))
        finally:
            server.stop()
    floor = statistics.median(timings["bare KNN 10"])
    print(f"# LoCoMo, one namespace of every turn, {args.server}, k={K}")
    print("| system | p50 ms | p95 ms | p50 / bare KNN 10 |")
    print("|---|---|---|---|")
    for name, values in timings.items():
        p50 = statistics.median(values)
        p95 = statistics.quantiles(values, n=20)[-1]
        print(f"| {name} | {p50 * 1000:.2f} | {p95 * 1000:.2f} | {p50 / floor:.1f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
