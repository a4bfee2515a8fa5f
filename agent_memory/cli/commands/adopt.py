"""``agent-memory adopt``: take in the memories BetterDB agent-memory wrote into a store."""

from __future__ import annotations

import argparse
from typing import Any

from agent_memory.cli.context import CliError, Invocation
from agent_memory.cli.options import AddParser
from agent_memory.cli.output import emit_json, out
from agent_memory.errors import CapabilityError


def register(add_parser: AddParser) -> None:
    parser = add_parser(
        "adopt",
        help="adopt the memories the BetterDB agent-memory libraries wrote into the store",
        epilog="Their records become memories of this store under the same ids (text, "
        "vector, importance, timestamps, tags, TTL and scope kept; their library still "
        "reads them). No text is embedded: the stored vectors are reused, so any "
        "--embedder works. A store whose index their library created is taken over only "
        "with --replace-index (the index is dropped and ours created; no record is lost).",
    )
    parser.add_argument(
        "--replace-index",
        action="store_true",
        help="the index was created by their library: replace it with ours",
    )
    parser.set_defaults(run=run)


class StoredVectorsOnly:
    """An embedder of the store's width that is never called: adoption reuses vectors."""

    def __init__(self, dim: int) -> None:
        self.dim = dim

    def __call__(self, text: str) -> list[float]:
        raise CapabilityError("adopt reuses the stored vectors and embeds no text")


def _stored_dim(client: Any, name: str) -> int | None:
    """The vector width the store's identity record (or its index) declares."""
    from agent_memory.core.clients import map_client_errors
    from agent_memory.errors import ServerResponseError
    from agent_memory.search.parse import parse_index_info

    with map_client_errors("HGET"):
        meta = client.hget(f"{name}:__mem_meta", "dim")
    if meta is not None:
        stored = meta.decode(errors="replace") if isinstance(meta, bytes) else str(meta)
        try:
            dim = int(stored)
        except ValueError:
            dim = 0
        if dim <= 0:  # another writer damaged it: no width to open the store with
            raise CliError(
                f"store '{name}' records the vector width {stored!r} in {name}:__mem_meta, "
                "not a positive whole number; repair that field (or delete it to use "
                "the index's width) and run adopt again"
            )
        return dim
    try:
        with map_client_errors("FT.INFO"):
            reply = client.execute_command("FT.INFO", f"{name}:mem:idx")
    except ServerResponseError:  # no index, or no search module
        return None
    return parse_index_info(reply).dim


def run(args: argparse.Namespace, inv: Invocation) -> int:
    from agent_memory import SyncMemoryStore

    probe = SyncMemoryStore.from_url(inv.url, name=args.name, embed=StoredVectorsOnly(1))
    with probe:
        dim = _stored_dim(probe.client, args.name)
    if dim is None:
        if args.json:
            emit_json({"adopted": 0, "skipped": 0, "index_replaced": False})
        else:
            out(f"store '{args.name}' has no index and no identity record: nothing to adopt")
        return 0
    with SyncMemoryStore.from_url(inv.url, name=args.name, embed=StoredVectorsOnly(dim)) as store:
        report = store.adopt_foreign(replace_index=args.replace_index)
    if args.json:
        emit_json({"adopted": report.adopted, "skipped": report.skipped,
                   "index_replaced": report.index_replaced})  # fmt: skip
        return 0
    if report.index_replaced:
        out(f"replaced the foreign index {args.name}:mem:idx with agent-memory's")
    out(f"adopted {report.adopted} memories into '{args.name}'")
    if report.skipped:
        out(f"left {report.skipped} records as they were (see the log for why)")
    return 0
