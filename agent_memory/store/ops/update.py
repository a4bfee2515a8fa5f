"""``update``: change fields of an existing memory, re-embedding a new text."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Command, Operation, command, execute, execute_batch
from agent_memory.core.replies import integer, optional_text, raise_first_error, text
from agent_memory.errors import AgentMemoryError, NotFoundError
from agent_memory.schema import layout as L
from agent_memory.schema import scripts
from agent_memory.schema.encoding import SHARED_SESSION_TOKEN, encode_value
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
from agent_memory.store.ops.settle import execute_writes
from agent_memory.store.validation import (
    check_id,
    check_importance,
    check_tags,
    check_text,
    check_ttl,
)

# A text change is written only over the text it was computed against (the statistics
# trade that text's terms for the new ones); another writer's change in between makes
# the update read again, this many times at most.
_ATTEMPTS = 8


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

    Raises:
        NotFoundError: no memory with that id (or it expired / was forgotten meanwhile).
        InvalidInputError: a bad value; nothing was changed.
        AgentMemoryError: other writers changed the memory's text at every attempt.
    """
    check_id(memory_id)
    new_content = (
        check_text(content, field="content", max_bytes=ctx.settings.max_content_bytes)
        if content is not None
        else None
    )
    new_importance = check_importance(importance) if importance is not None else None
    new_tags = check_tags(tags) if tags is not None else None
    new_ttl = check_ttl(ttl)
    yield from ensure_ready(ctx)
    key = ctx.keys.memory(memory_id)
    vector: NDArray[np.float32] | None = None
    for _ in range(_ATTEMPTS):
        current = yield from execute("HMGET", key, *L.ITEM_FIELDS)
        fields = {n: v for n, v in zip(L.ITEM_FIELDS, current or [], strict=False) if v is not None}
        if L.F_CONTENT not in fields:
            raise NotFoundError(f"no memory with id {memory_id!r}")
        item = parse_item(memory_id, fields)
        changes: list[str | bytes] = []
        content_changed = new_content is not None and new_content != item.content
        if new_content is not None and content_changed:
            if vector is None:  # the text to write is the same at every attempt
                vector = yield from embed_one(ctx, new_content)
            changes += [L.F_CONTENT, new_content, L.F_VECTOR, vector_blob(vector)]
            session = optional_text(fields.get(L.F_SESSION)) or SHARED_SESSION_TOKEN
            changes += session_vector_fields(session, vector)
            changes += lexical_fields(new_content, ctx.lexical_form)
        if new_importance is not None:
            changes += [L.F_IMPORTANCE, repr(new_importance)]
        if new_tags is not None:
            changes += [L.F_TAGS_RAW, json.dumps(list(new_tags), ensure_ascii=False)]
            changes += [L.F_TAGS, L.TAG_SEPARATOR.join(encode_value(t) for t in new_tags)]
        ttl_ms = max(1, math.ceil(new_ttl * 1000)) if new_ttl is not None else 0
        expires = ctx.now_ms() + ttl_ms if new_ttl is not None else None
        if expires is not None:
            changes += [L.F_EXPIRES, str(expires)]
        ns_token = text(fields[L.F_NAMESPACE])
        terms: dict[str, int] = {}
        if new_content is not None and content_changed:
            terms = stats_delta([new_content], 1)
            for name, amount in stats_delta([item.content], -1).items():
                terms[name] = terms.get(name, 0) + amount
            terms = {name: amount for name, amount in terms.items() if amount}
            write = _text_change(ctx, key, ns_token, ttl_ms, item.content, terms, changes)
        else:
            write = Command(("EVAL", scripts.UPDATE_IF_EXISTS, "1", key, str(ttl_ms), *changes))
        commands = [write]
        cluster_terms = ctx.settings.cluster and bool(terms)
        if expires is not None:
            agent, thread = (optional_text(fields.get(f)) for f in (L.F_AGENT, L.F_THREAD))
            commands += [
                command("ZADD", listed, "XX", str(expires), memory_id)
                for listed in ctx.keys.expiry_sets(ns_token, agent, thread)
            ]
            commands.append(bump(ctx.keys.registry_version(ns_token)))
        if new_tags is not None or new_content is not None:
            commands.append(bump(ctx.keys.epoch(ns_token)))
        replies = yield from execute_writes(ctx, commands)
        raise_first_error(replies)
        outcome = integer(replies[0])
        if outcome == 0:
            raise NotFoundError(f"memory {memory_id!r} was forgotten while being updated")
        if outcome < 0:
            continue  # its text changed since it was read
        reads = [Command(("HMGET", key, *L.ITEM_FIELDS))]
        adjust = adjust_args(ctx.keys.term_stats(ns_token), terms) if cluster_terms else None
        if adjust is not None:  # not atomic with the write: see _text_change
            reads.insert(0, Command(adjust))
        done = yield from execute_batch(reads)
        raise_first_error(done)
        refreshed = done[-1]
        fields = {
            n: v for n, v in zip(L.ITEM_FIELDS, refreshed or [], strict=False) if v is not None
        }
        if L.F_CONTENT not in fields:
            raise NotFoundError(f"memory {memory_id!r} was forgotten while being updated")
        return parse_item(memory_id, fields)
    raise AgentMemoryError(
        f"memory {memory_id!r}: its text changed under {_ATTEMPTS} attempts to update it"
    )


def _text_change(
    ctx: StoreContext,
    key: str,
    ns_token: str,
    ttl_ms: int,
    expected: str,
    terms: dict[str, int],
    changes: list[str | bytes],
) -> Command:
    """The write of a new text over ``expected``, trading its terms in the statistics in
    the same script on a standalone server. A cluster keeps the statistics in another
    slot: the caller adds the terms once the write succeeded, so racing updates or a
    racing forget may leave them slightly off there (a count below zero is dropped)."""
    stats = () if ctx.settings.cluster else (ctx.keys.term_stats(ns_token),)
    return Command(
        (
            "EVAL", scripts.UPDATE_TEXT, str(1 + len(stats)), key, *stats,
            str(ttl_ms), L.F_CONTENT, expected, str(len(terms)),
            *(x for name, amount in sorted(terms.items()) for x in (name, str(amount))),
            *changes,
        )
    )  # fmt: skip


__all__ = ["update"]
