"""The store's list of its namespaces (``{name}:__mem_namespaces``).

``stats``, ``prune`` and the foreign-record checks visit every namespace registry. They
used to find them with a SCAN of the whole keyspace, whose cost grows with every key
the server holds, the store's or not. Every write now adds its namespace token to one
set (inside the standalone write script; in the cluster write's first round trip,
before the record), so finding the registries is one ``SMEMBERS``.

A store written before the set existed is scanned once to fill it; ``{name}:__mem_meta``
field :data:`~agent_memory.schema.layout.NAMESPACES_META_FIELD` says that it was (a
store created by this version is marked at once). A write racing the fill adds its
token itself, so the set never misses a namespace a write of this version created.
Tokens stay after their namespace empties; ``prune`` removes those on a standalone
server (one script checks that the registry is gone and removes the token atomically
with the writes). On a cluster the registry and the set live in different slots, so a
forgotten namespace keeps its token: it costs one ``ZCOUNT`` in ``stats``.
"""

from __future__ import annotations

import logging
from typing import Any

from agent_memory.backends.context import StoreContext
from agent_memory.cache.keys import glob_escape
from agent_memory.core.effects import Command, Operation, command, execute_batch, scan_keys
from agent_memory.core.replies import lenient_text, optional_text, raise_first_error, text
from agent_memory.errors import AgentMemoryError, WrongTypeError
from agent_memory.schema import layout as L
from agent_memory.schema import scripts

logger = logging.getLogger("agent_memory.store")


def mark_listed(ctx: StoreContext) -> Operation[None]:
    """Record that the namespace set is complete (a store created just now: its writes
    keep the set, there is nothing to scan)."""
    replies = yield from execute_batch(
        [command("HSET", ctx.keys.meta, L.NAMESPACES_META_FIELD, L.NAMESPACES_VERSION)]
    )
    raise_first_error(replies)


def registry_keys(ctx: StoreContext, *, rescan: bool = False) -> Operation[list[str]]:
    """Every namespace registry of the store, sorted: the namespace set (one round
    trip), or a SCAN of the keyspace when the set is not known complete (a store written
    before it existed: the scan fills it), when it is damaged, or when ``rescan`` asks
    (to find namespaces a write of an older version created)."""
    if not rescan:
        replies = yield from execute_batch(
            [
                command("HGET", ctx.keys.meta, L.NAMESPACES_META_FIELD),
                command("SMEMBERS", ctx.keys.namespaces),
            ]
        )
        marked, members = replies
        if isinstance(marked, AgentMemoryError):
            raise marked
        if isinstance(members, WrongTypeError):
            _report_damage(ctx, members)
            found = yield from _scanned(ctx)
            return found
        if isinstance(members, AgentMemoryError):
            raise members
        if optional_text(marked) == L.NAMESPACES_VERSION:
            return sorted({ctx.keys.registry(token) for token in _tokens(ctx, members)})
    found = yield from _scanned(ctx)
    yield from _fill(ctx, found)
    return found


def _tokens(ctx: StoreContext, members: Any) -> list[str]:
    """The namespace tokens of an ``SMEMBERS`` reply; a member that is not UTF-8 names
    no namespace a write of this library listed: skipped, logged and counted."""
    tokens = []
    for member in members or ():
        token = lenient_text(member)
        if token is None:
            logger.warning(
                "store %s: %s lists %r, which is not a namespace token; skipped",
                ctx.keys.name, ctx.keys.namespaces, member,
            )  # fmt: skip
            ctx.count("corrupt_records")
            continue
        tokens.append(token)
    return tokens


def _scanned(ctx: StoreContext) -> Operation[list[str]]:
    prefix = ctx.keys.registry("")
    found = yield from scan_keys(glob_escape(prefix) + "*")
    return sorted(set(map(text, found)))  # SCAN may repeat keys


def _fill(ctx: StoreContext, registries: list[str]) -> Operation[None]:
    """Add the scanned registries' tokens to the set, then mark it complete (two round
    trips: on a cluster the set and the mark live in different slots, and the mark must
    not land when the additions failed)."""
    start = len(ctx.keys.registry(""))
    tokens = [key[start:] for key in registries]
    if tokens:
        replies = yield from execute_batch([command("SADD", ctx.keys.namespaces, *tokens)])
        if isinstance(replies[0], WrongTypeError):
            _report_damage(ctx, replies[0])
            return
        raise_first_error(replies)
    yield from mark_listed(ctx)


def forget_if_empty(ctx: StoreContext, namespace_token: str) -> Command:
    """The command removing a namespace's token when its registry is gone (standalone
    servers; see :data:`~agent_memory.schema.scripts.FORGET_EMPTY_NAMESPACE`)."""
    registry = ctx.keys.registry(namespace_token)
    return Command(
        (
            "EVAL",
            scripts.FORGET_EMPTY_NAMESPACE,
            "2",
            registry,
            ctx.keys.namespaces,
            namespace_token,
        )
    )


def check_forgotten(ctx: StoreContext, reply: Any) -> None:
    """Log and count a failed token removal (the set was replaced by another type)."""
    if isinstance(reply, WrongTypeError) or (not isinstance(reply, Exception) and reply == -1):
        _report_damage(ctx, reply)
    elif isinstance(reply, AgentMemoryError):
        raise reply


def _report_damage(ctx: StoreContext, reply: Any) -> None:
    logger.warning(
        "store %s: %s is not a set (%s); the registries are found by a scan of the keyspace",
        ctx.keys.name, ctx.keys.namespaces, reply,
    )  # fmt: skip
    ctx.count("corrupt_records")
