"""``expire_many``: set the expiry of many memories in one batch (a TTL refreshed on
read, say), where ``update(id, ttl=...)`` costs two round trips per memory."""

from __future__ import annotations

import math
from collections.abc import Mapping

from agent_memory.backends.context import StoreContext
from agent_memory.backends.reads import (
    Unreadable,
    fields_of,
    read_many,
    read_many_replies,
    unreadable,
)
from agent_memory.core.effects import Command, Operation, command, execute_batch
from agent_memory.core.replies import integer, optional_text, raise_first_error
from agent_memory.errors import InvalidInputError
from agent_memory.schema import layout as L
from agent_memory.schema.versions import bump
from agent_memory.store.ops.ensure import ensure_ready
from agent_memory.store.ops.guarded import IDENTITY, guarded_update
from agent_memory.store.ops.settle import execute_writes
from agent_memory.store.validation import check_id, check_ttl

# What a new expiry touches besides the record: the sets that score it by its expiry;
# read with what tells whether a write under its id replaced it since.
_LOCATION = (L.F_NAMESPACE, L.F_AGENT, L.F_THREAD, L.F_EXPIRES)
_READ = tuple(dict.fromkeys((*_LOCATION, *IDENTITY)))


def check_ttls(ttls: object) -> dict[str, float]:
    """``{memory id: seconds}``, every id and TTL checked (pure)."""
    if not isinstance(ttls, Mapping):
        raise InvalidInputError("ttls must be a mapping of memory id to seconds", field="ttls")
    checked: dict[str, float] = {}
    for memory_id, ttl in ttls.items():
        seconds = check_ttl(ttl)
        if seconds is None:
            raise InvalidInputError(f"the ttl of {memory_id!r} is None", field="ttl")
        checked[check_id(memory_id)] = seconds
    return checked


def expire_many(ctx: StoreContext, ttls: Mapping[str, float]) -> Operation[list[str]]:
    """Expire each memory ``ttls[id]`` seconds from now: one round trip reads where the
    memories are listed, one writes every new expiry (the record's, as ``update`` does,
    and its score in the expiry-ordered sets: in the same script on a standalone
    server). A memory replaced meanwhile by a write under its id keeps that write's
    expiry and listings, as if this call had come first. Returns the ids that still
    existed."""
    checked = check_ttls(ttls)
    if not checked:
        return []
    yield from ensure_ready(ctx)
    ids = list(checked)
    replies = yield from execute_batch(read_many(ctx, [ctx.keys.memory(m) for m in ids], _READ))
    now = ctx.now_ms()
    cluster = ctx.settings.cluster
    writes: list[Command] = []
    namespaces: set[str] = set()
    written: list[tuple[str, int]] = []  # (id, position of its script in writes)
    for memory_id, values in zip(ids, read_many_replies(ctx, replies, len(ids)), strict=True):
        if isinstance(values, Unreadable):
            unreadable(ctx, memory_id, "its key holds no hash")
            continue
        read = fields_of(values, _READ)
        namespace, agent, thread, expiry = (optional_text(read.get(f)) for f in _LOCATION)
        if namespace is None:
            continue  # gone (or not a memory this library wrote)
        if expiry is not None and expiry.isascii() and expiry.isdigit() and int(expiry) <= now:
            continue  # expired by the store's clock: never brought back
        ttl_ms = max(1, math.ceil(checked[memory_id] * 1000))
        expires = now + ttl_ms
        listings = ctx.keys.expiry_sets(namespace, agent, thread)
        written.append((memory_id, len(writes)))
        writes.append(
            guarded_update(
                ctx.keys.memory(memory_id), memory_id, read, ttl_ms=ttl_ms,
                writes=(L.F_EXPIRES, str(expires)),
                listings=() if cluster else listings, score=expires,
            )
        )  # fmt: skip
        if cluster:  # the listings live in other slots (XX: a memory deleted meanwhile
            # is not put back in them)
            writes += [command("ZADD", key, "XX", str(expires), memory_id) for key in listings]
        namespaces.add(namespace)
    writes += [bump(ctx.keys.registry_version(ns)) for ns in sorted(namespaces)]
    if not written:
        return []
    done = yield from execute_writes(ctx, writes)
    raise_first_error(done)
    # -1: replaced by a write under its id since the read, which came after this call.
    return [memory_id for memory_id, at in written if integer(done[at]) != 0]


__all__ = ["check_ttls", "expire_many"]
