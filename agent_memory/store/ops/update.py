"""``update``: change fields of an existing memory, re-embedding a new text."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent_memory.backends.context import StoreContext
from agent_memory.backends.reads import fields_of
from agent_memory.core.effects import (
    Command,
    Operation,
    command,
    execute,
    execute_batch,
    sleep,
)
from agent_memory.core.replies import integer, optional_text, raise_first_error, text
from agent_memory.errors import AgentMemoryError, NotFoundError
from agent_memory.schema import layout as L
from agent_memory.schema.encoding import SHARED_SESSION_TOKEN, encode_value
from agent_memory.schema.layout import Keys
from agent_memory.schema.lexical import adjust_args, stats_delta
from agent_memory.schema.records import (
    lexical_fields,
    parse_item,
    session_vector_fields,
    vector_blob,
)
from agent_memory.schema.types import MemoryItem
from agent_memory.schema.versions import bump
from agent_memory.store.ops.embedding import embed_one
from agent_memory.store.ops.ensure import ensure_ready
from agent_memory.store.ops.guarded import IDENTITY, guarded_update
from agent_memory.store.ops.read import is_expired, item_commands, parse_items
from agent_memory.store.ops.settle import execute_writes
from agent_memory.store.validation import (
    check_id,
    check_importance,
    check_tags,
    check_text,
    check_ttl,
)

# How many times an update reads again after another writer changed the memory.
_ATTEMPTS = 8
_FIRST_BACKOFF = 0.001  # seconds, doubled at each attempt
_MAX_BACKOFF = 0.05


@dataclass(frozen=True)
class Changes:
    """The checked new values of an update (``None``: leave the field as it is)."""

    content: str | None = None
    importance: float | None = None
    tags: tuple[str, ...] | None = None
    ttl: float | None = None


@dataclass(frozen=True)
class UpdatePlan:
    """The commands of one update attempt. The first one's reply says how it went (1
    written, 0 the memory is gone, below 0 it changed since it was read: another
    text, or a write under its id);
    ``cluster_terms`` are the term statistics to trade after the write (only on a
    cluster, where they live in another slot than the memory)."""

    commands: list[Command]
    cluster_terms: dict[str, int]


def plan_update(
    *,
    keys: Keys,
    cluster: bool,
    lexical_form: str,
    memory_id: str,
    fields: Mapping[str, Any],
    current_content: str,
    changes: Changes,
    vector: NDArray[np.float32] | None,
    now_ms: int,
) -> UpdatePlan:
    """The commands that update the memory whose record read as ``fields`` (its text
    ``current_content``): the record's new fields, its listings' expiry when the TTL
    changes, and the version and epoch bumps that tell readers. ``vector`` is the new
    text's embedding, needed only when the text changes."""
    key = keys.memory(memory_id)
    writes: list[str | bytes] = []
    new_text = changes.content if changes.content != current_content else None
    if new_text is not None:
        if vector is None:
            raise ValueError("a changed text needs its embedding")
        session = optional_text(fields.get(L.F_SESSION)) or SHARED_SESSION_TOKEN
        writes += [L.F_CONTENT, new_text, L.F_VECTOR, vector_blob(vector)]
        writes += session_vector_fields(session, vector)
        writes += lexical_fields(new_text, lexical_form)
    if changes.importance is not None:
        writes += [L.F_IMPORTANCE, repr(changes.importance)]
    if changes.tags is not None:
        writes += [L.F_TAGS_RAW, json.dumps(list(changes.tags), ensure_ascii=False)]
        writes += [L.F_TAGS, L.TAG_SEPARATOR.join(encode_value(t) for t in changes.tags)]
    ttl_ms = max(1, math.ceil(changes.ttl * 1000)) if changes.ttl is not None else 0
    expires = now_ms + ttl_ms if changes.ttl is not None else None
    if expires is not None:
        writes += [L.F_EXPIRES, str(expires)]
    ns_token = text(fields[L.F_NAMESPACE])
    agent, thread = (optional_text(fields.get(f)) for f in (L.F_AGENT, L.F_THREAD))
    listings = keys.expiry_sets(ns_token, agent, thread) if expires is not None else []
    terms = term_trade(current_content, new_text) if new_text is not None else {}
    # Written only over the memory read (a write under its id since moves or replaces
    # it) and, for a new text, over the text the terms and embedding were computed from.
    write = guarded_update(
        key, memory_id, fields,
        guard=(*IDENTITY, L.F_CONTENT) if new_text is not None else IDENTITY,
        ttl_ms=ttl_ms, writes=writes,
        term_stats=None if cluster or not terms else keys.term_stats(ns_token), terms=terms,
        listings=() if cluster else listings, score=expires,
    )  # fmt: skip
    commands = [write]
    if cluster:  # the listings live in other slots: re-scored beside the write
        commands += [command("ZADD", listed, "XX", str(expires), memory_id) for listed in listings]
    if expires is not None:
        commands.append(bump(keys.registry_version(ns_token)))
    if changes.tags is not None or changes.content is not None:
        commands.append(bump(keys.epoch(ns_token)))
    return UpdatePlan(commands, terms if cluster else {})


def term_trade(old: str, new: str) -> dict[str, int]:
    """The change of each term's document count when a memory's text ``old`` becomes
    ``new`` (terms both hold cancel out)."""
    terms = stats_delta([new], 1)
    for name, amount in stats_delta([old], -1).items():
        terms[name] = terms.get(name, 0) + amount
    return {name: amount for name, amount in terms.items() if amount}


def update(
    ctx: StoreContext,
    memory_id: str,
    *,
    content: str | None,
    importance: float | None,
    tags: Sequence[str] | None,
    ttl: float | None,
) -> Operation[MemoryItem]:
    """Change fields of an existing memory; re-embeds when the content changes.

    The write applies only to the memory read: a write under its id since (which may
    have moved it to another namespace, agent or thread) makes the update read again,
    as does another text when the text changes. A new text is written only over the
    text it was computed against, and on a standalone server the statistics of the
    memory's namespace trade that text's terms for the new ones, and a new TTL re-scores
    its listings, in the same script. On a cluster the statistics and listings live in
    other slots: the statistics are traded once the write succeeded and the listings
    re-scored beside it, so racing writes may leave them slightly off there (a count
    below zero is dropped). Two round trips: the read, then the write with the read-back of
    the item returned (as ``get`` reads it); a third on a cluster when the text changes.

    Raises:
        NotFoundError: no memory with that id (or it expired / was forgotten meanwhile).
        InvalidInputError: a bad value; nothing was changed.
        AgentMemoryError: other writers changed the memory (its text, or a write under
            its id) at every attempt.
    """
    check_id(memory_id)
    changes = Changes(
        content=(
            check_text(content, field="content", max_bytes=ctx.settings.max_content_bytes)
            if content is not None
            else None
        ),
        importance=check_importance(importance) if importance is not None else None,
        tags=check_tags(tags) if tags is not None else None,
        ttl=check_ttl(ttl),
    )
    yield from ensure_ready(ctx)
    key = ctx.keys.memory(memory_id)
    vector: NDArray[np.float32] | None = None  # the text to write is the same at every attempt
    for attempt in range(_ATTEMPTS):
        if attempt:
            # Another writer's text won the last round: step aside for a random while
            # (doubling, capped), or writers that retry in step keep beating each other.
            yield from sleep(random.uniform(0, min(_MAX_BACKOFF, _FIRST_BACKOFF * 2**attempt)))
        fields = fields_of((yield from execute("HMGET", key, *L.ITEM_FIELDS)))
        if L.F_CONTENT not in fields or is_expired(fields, ctx.now_ms()):
            raise NotFoundError(f"no memory with id {memory_id!r}")
        if L.F_NAMESPACE not in fields:  # no registry or statistics to keep in step
            raise NotFoundError(
                f"memory {memory_id!r} has no namespace: a record another library wrote "
                "that this store has not adopted (see adopt_foreign), or a damaged one"
            )
        current = parse_item(memory_id, fields).content
        if changes.content is not None and changes.content != current and vector is None:
            vector = yield from embed_one(ctx, changes.content)
        plan = plan_update(
            keys=ctx.keys, cluster=ctx.settings.cluster, lexical_form=ctx.lexical_form,
            memory_id=memory_id, fields=fields, current_content=current, changes=changes,
            vector=vector, now_ms=ctx.now_ms(),
        )  # fmt: skip
        # The memory as written is read back in the same round trip, as get() reads
        # it (usage counters and retention included), after the write even when its
        # script is sent again (unknown to the server).
        reads = [replace(c, after_scripts=True) for c in item_commands(ctx, [memory_id])]
        replies = yield from execute_writes(ctx, [*plan.commands, *reads])
        written, read_back = replies[: len(plan.commands)], replies[len(plan.commands) :]
        raise_first_error(written)
        outcome = integer(written[0])
        if outcome == 0:
            raise NotFoundError(f"memory {memory_id!r} was forgotten while being updated")
        if outcome < 0:
            continue  # changed since it was read (another text, or rewritten)
        adjust = adjust_args(ctx.keys.term_stats(text(fields[L.F_NAMESPACE])), plan.cluster_terms)
        if adjust is not None:  # not atomic with the write (see above)
            raise_first_error((yield from execute_batch([Command(adjust)])))
        ((_, _, item),) = parse_items(ctx, [memory_id], read_back)
        if item is None:
            raise NotFoundError(
                f"memory {memory_id!r} was forgotten (or expired) while being updated"
            )
        return item
    raise AgentMemoryError(
        f"memory {memory_id!r}: other writers changed it under {_ATTEMPTS} attempts to update it"
    )


__all__ = ["Changes", "UpdatePlan", "plan_update", "term_trade", "update"]
