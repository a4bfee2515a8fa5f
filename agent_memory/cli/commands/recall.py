"""``agent-memory recall``: the memories most relevant to a query, best first."""

from __future__ import annotations

import argparse
from typing import Any

from agent_memory.cli.context import Invocation
from agent_memory.cli.options import AddParser, add_scope_options, distance, positive_int
from agent_memory.cli.output import emit_json, iso, jsonable, out, render_table

HEADERS = ("#", "SCORE", "DIST", "ID", "CREATED", "CONTENT")


def register(add_parser: AddParser) -> None:
    parser = add_parser("recall", help="recall the memories most relevant to a query")
    parser.add_argument("query", help="what to recall")
    add_scope_options(parser)
    parser.add_argument("-k", type=positive_int, default=8, help="at most this many hits (8)")
    parser.add_argument(
        "--threshold",
        type=distance,
        help="cosine-distance gate (default: the store's, from the embedder)",
    )
    parser.add_argument(
        "--reinforce",
        action="store_true",
        help="count this recall as an access of the hits (default: read-only)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, inv: Invocation) -> int:
    result = inv.store().recall(
        args.query,
        scope=inv.scope(),
        k=args.k,
        tags=args.tags,
        threshold=args.threshold,
        reinforce=args.reinforce,
    )
    if args.json:
        emit_json(
            {
                "query": args.query,
                "selection_id": result.selection_id,
                "backend": result.backend,
                "candidates": result.candidates,
                "nearest_distance": result.nearest_distance,
                "near_miss": result.near_miss,
                "hits": [_hit(h) for h in result],
            }
        )
        return 0
    if not result:
        out(_nothing(result))
        return 0
    rows = [
        (
            rank,
            f"{hit.score:.3f}",
            f"{hit.distance:.3f}",
            hit.item.id,
            iso(hit.item.created_at),
            hit.item.content,
        )
        for rank, hit in enumerate(result, 1)
    ]
    out(render_table(HEADERS, rows, align="rrrlll", flex=5))
    hits = "1 hit" if len(result) == 1 else f"{len(result)} hits"
    out(f"\n{hits}; selection {result.selection_id}; backend {result.backend}")
    return 0


def _hit(hit: Any) -> dict[str, Any]:
    return {
        "score": hit.score,
        "distance": hit.distance,
        "similarity": hit.similarity,
        "item": jsonable(hit.item),
    }


def _nothing(result: Any) -> str:
    if result.nearest_distance is None:
        return "no memories in this scope"
    text = f"nothing within the threshold (nearest distance {result.nearest_distance:.3f})"
    if result.near_miss:
        text += "; near miss: the nearest memory lay within twice the threshold"
    return text
