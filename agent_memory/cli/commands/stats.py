"""``agent-memory stats``: the store's size, backend and counters, and the cache tiers'."""

from __future__ import annotations

import argparse
from typing import Any

from agent_memory.cli.context import Invocation
from agent_memory.cli.options import AddParser
from agent_memory.cli.output import emit_json, jsonable, out, render_pairs


def register(add_parser: AddParser) -> None:
    parser = add_parser("stats", help="memories, backend and counters of the store and caches")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, inv: Invocation) -> int:
    from agent_memory import SyncLlmCache

    store = inv.store()
    memory = store.stats()
    cache = SyncLlmCache(store.client, args.name).stats()
    status = inv.status
    if args.json:
        emit_json(
            {
                "name": args.name,
                "server": inv.where(),
                "embedder": inv.embedder_label,
                "backend": status.backend,
                "dialect": str(status.dialect),
                "dim": status.dim,
                "items": memory.items,
                "evictions": memory.evictions,
                "counters": memory.counters,
                "cache": {
                    **jsonable(cache),
                    "llm_hit_rate": cache.llm_hit_rate,
                    "tool_hit_rate": cache.tool_hit_rate,
                    "cost_saved": cache.cost_saved,
                },
            }
        )
        return 0
    pairs: list[tuple[str, object]] = [
        ("store", args.name),
        ("server", inv.where()),
        ("backend", f"{status.backend} ({status.dialect})"),
        ("embedder", inv.embedder_label),
        ("dimension", status.dim),
        ("memories", memory.items),
        ("evictions", memory.evictions),
    ]
    out(render_pairs(pairs))
    counters = sorted(memory.counters.items())
    if counters:
        out(f"counters ({args.name}:__mem_stats):")
        out(render_pairs(counters, indent="  "))
    out(f"cache tiers ({args.name}:__stats):")
    out(render_pairs(_cache_pairs(cache), indent="  "))
    return 0


def _rate(hits: int, misses: int) -> str:
    total = hits + misses
    share = f" ({100 * hits / total:.1f}% hits)" if total else ""
    return f"{hits} hits, {misses} misses{share}"


def _cache_pairs(cache: Any) -> list[tuple[str, object]]:
    pairs: list[tuple[str, object]] = [
        ("llm", _rate(cache.llm_hits, cache.llm_misses)),
        ("tool", _rate(cache.tool_hits, cache.tool_misses)),
    ]
    pairs += [(f"  tool {t.tool}", _rate(t.hits, t.misses)) for t in cache.tools]
    pairs += [
        ("session", f"{cache.session_reads} reads, {cache.session_writes} writes"),
        ("embedding", _rate(cache.embedding_hits, cache.embedding_misses)),
        ("cost saved", f"${cache.cost_saved:.4f}"),
    ]
    return pairs
