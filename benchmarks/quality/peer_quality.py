"""The quality scenario for the peer ``betterdb-agent-memory`` (runs in the peer venv).

Usage (by :mod:`benchmarks.quality.peer`): ``python peer_quality.py job.json out.json``.
Imports only the peer, valkey and numpy, never ``agent_memory``. The job lists each
conversation's turns (content, speaker tag, dia_id, created ms) and questions with their
precomputed vectors; the peer's clock (``_now_ms``) is set like ours.
"""

from __future__ import annotations

import asyncio
import json
import sys
from typing import Any

import numpy as np
import valkey.asyncio as valkey_asyncio
from betterdb_agent_memory import MemoryStore  # type: ignore[import-not-found,unused-ignore]
from betterdb_agent_memory.types import (  # type: ignore[import-not-found,unused-ignore]
    RecallWeights,
)

K = 10
SCENARIOS: dict[str, tuple[RecallWeights | None, float | None]] = {
    "cosine": (RecallWeights(similarity=1.0, recency=0.0, importance=0.0), 2.0),
    "default": (None, None),
    "default_nogate": (None, 2.0),
}


async def run_conv(client: Any, conv: dict[str, Any]) -> dict[str, list[list[str]]]:
    matrix = np.load(conv["vectors"])
    table = {text: matrix[i].tolist() for i, text in enumerate(conv["texts"])}

    async def embed(text: str) -> list[float]:
        return table.get(text, table[conv["texts"][0]])  # type: ignore[no-any-return,unused-ignore]

    now = [0]
    store = MemoryStore(client=client, name=conv["name"], embed_fn=embed, analytics=False)
    store._now_ms = lambda: now[0]  # type: ignore[method-assign,unused-ignore]
    await store.ensure_index()
    for turn in conv["turns"]:
        now[0] = turn["created_ms"]
        await store.remember(turn["content"], tags=[turn["speaker"]], source=turn["dia_id"])
    now[0] = conv["ask_ms"]
    out: dict[str, list[list[str]]] = {key: [] for key in SCENARIOS}
    for question in conv["questions"]:
        for key, (weights, threshold) in SCENARIOS.items():
            hits = await store.recall(
                question, k=K, weights=weights, threshold=threshold, reinforce=False
            )
            out[key].append([h.item.source or "" for h in hits])
    await store.close()
    return out


async def main(job_path: str, out_path: str) -> None:
    with open(job_path) as f:
        job = json.load(f)
    client = valkey_asyncio.Valkey.from_url(job["url"])
    try:
        results = {conv["name"]: await run_conv(client, conv) for conv in job["conversations"]}
    finally:
        await client.aclose()
    with open(out_path, "w") as f:
        json.dump(results, f)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
