"""``agent-memory prune``: delete the memories that forgetting suppresses from recall."""

from __future__ import annotations

import argparse
import math

from agent_memory.cli.context import Invocation
from agent_memory.cli.options import AddParser
from agent_memory.cli.output import emit_json, out, render_pairs
from agent_memory.schema.utility import Forgetting

DAY = 86400.0


def _days(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a number of days > 0, got {text}")
    return value


def _share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), got {text}")
    return value


def register(add_parser: AddParser) -> None:
    parser = add_parser(
        "prune",
        help="delete memories that forgetting suppresses (they no longer recall)",
        epilog="Pass the forgetting policy your application gives the store "
        "(forgetting=Forgetting(...)): --half-life is required, so a store whose "
        "application never enabled forgetting is not pruned by accident; the other "
        "options default to the library's. Expired memories' bookkeeping is cleaned up too.",
    )
    parser.add_argument("--namespace", help="only this namespace (default: every namespace)")
    policy = parser.add_argument_group("forgetting policy")
    policy.add_argument(
        "--half-life", type=_days, metavar="DAYS", required=True,
        help="base half-life in days (the library's default is 30)",
    )  # fmt: skip
    policy.add_argument(
        "--min-half-life", type=_days, metavar="DAYS",
        help="(default: the half-life / 30; 1 day for 30)",
    )  # fmt: skip
    policy.add_argument(
        "--max-half-life", type=_days, metavar="DAYS",
        help="(default: the half-life * 365 / 30; 365 days for 30)",
    )  # fmt: skip
    policy.add_argument(
        "--retention-threshold",
        type=_share,
        metavar="R",
        help="retention below which a memory is forgotten (default: 0.05)",
    )
    parser.set_defaults(run=run)


def _policy(args: argparse.Namespace) -> Forgetting:
    options: dict[str, float] = {}
    for arg, field, scale in (
        ("half_life", "half_life_seconds", DAY),
        ("min_half_life", "min_half_life", DAY),
        ("max_half_life", "max_half_life", DAY),
        ("retention_threshold", "retention_threshold", 1.0),
    ):
        value = getattr(args, arg)
        if value is not None:
            options[field] = value * scale
    return Forgetting(**options)


def run(args: argparse.Namespace, inv: Invocation) -> int:
    from agent_memory import Scope

    policy = _policy(args)
    store = inv.store(forgetting=policy)
    scope = Scope(namespace=args.namespace) if args.namespace is not None else None
    result = store.prune(scope)
    deleted = list(result.deleted)
    cleaned = result.registry_entries
    where = f"namespace '{args.namespace}'" if args.namespace is not None else "every namespace"
    if args.json:
        emit_json(
            {
                "deleted": deleted,
                "registry_entries": cleaned,
                "namespace": args.namespace,
                "policy": policy,
            }
        )
        return 0
    out(f"pruned {len(deleted)} forgotten memories of '{args.name}' ({where})")
    if cleaned:
        out(f"cleaned up {cleaned} bookkeeping entries of expired memories")
    pairs = [
        ("half-life", f"{policy.half_life_seconds / DAY:g} days"),
        ("between", f"{policy.shortest / DAY:g} and {policy.longest / DAY:g} days"),
        ("retention threshold", f"{policy.retention_threshold:g}"),
    ]
    out("policy:")
    out(render_pairs(pairs, indent="  "))
    return 0
