"""``agent-memory list``: a page of memories of a scope, newest first."""

from __future__ import annotations

import argparse

from agent_memory.cli.context import Invocation
from agent_memory.cli.options import AddParser, add_scope_options, non_negative_int, positive_int
from agent_memory.cli.output import emit_json, iso, jsonable, out, render_table, scope_text

HEADERS = ("ID", "CREATED", "IMP", "TAGS", "SCOPE", "CONTENT")


def register(add_parser: AddParser) -> None:
    parser = add_parser("list", help="list memories of a scope, newest first")
    add_scope_options(parser)
    parser.add_argument("--limit", type=positive_int, default=20, help="page size (default 20)")
    parser.add_argument("--offset", type=non_negative_int, default=0, help="skip this many")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace, inv: Invocation) -> int:
    page = inv.store().list(scope=inv.scope(), tags=args.tags, limit=args.limit, offset=args.offset)
    if args.json:
        emit_json(
            {
                "total": page.total,
                "offset": args.offset,
                "limit": args.limit,
                "items": jsonable(page.items),
            }
        )
        return 0
    if not page.items:
        out(f"no memories (total {page.total})" if page.total else "no memories")
        return 0
    rows = [
        (
            item.id,
            iso(item.created_at),
            f"{item.importance:.2f}",
            ",".join(item.tags) or "-",
            scope_text(item.scope),
            item.content,
        )
        for item in page.items
    ]
    out(render_table(HEADERS, rows, align="llrlll", flex=5, max_widths={3: 24, 4: 32}))
    last = args.offset + len(page.items)
    more = f"; --offset {last} for more" if last < page.total else ""
    out(f"\n{args.offset + 1}-{last} of {page.total} memories{more}")
    return 0
