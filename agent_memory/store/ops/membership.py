"""Per-agent and per-thread id indexes (``{name}:__mem_agent:...``, ``__mem_thread:...``).

They let ``list``, ``forget_by_scope`` and consolidation walk only the memories of one
agent or thread. A store written before they existed is indexed once, on the first
``ensure_index``; ``{name}:__mem_meta`` field ``member_indexes`` records that it is done.
"""

from __future__ import annotations

from agent_memory.backends.context import StoreContext
from agent_memory.backends.reads import unreadable
from agent_memory.core.effects import Command, Operation, command, execute_batch, scan_keys
from agent_memory.core.replies import optional_text, raise_first_error, text
from agent_memory.errors import ReplyParseError, WrongTypeError
from agent_memory.schema import layout as L

META_FIELD = "member_indexes"
VERSION = "v1"
_CHUNK = 1000


def ensure_member_indexes(ctx: StoreContext, *, fresh: bool = False) -> Operation[bool]:
    """Build the agent/thread indexes of a store that lacks them; True when built.

    ``fresh``: the store identity was created just now, so there is nothing to index.
    """
    replies = yield from execute_batch([command("HGET", ctx.keys.meta, META_FIELD)])
    raise_first_error(replies)
    if optional_text(replies[0]) == VERSION:
        return False
    if fresh:
        marked = yield from execute_batch([command("HSET", ctx.keys.meta, META_FIELD, VERSION)])
        raise_first_error(marked)
        return True
    prefix = ctx.keys.registry("")
    registries = yield from scan_keys(prefix.replace("*", "\\*") + "*")
    for raw_key in registries:
        registry = text(raw_key)
        namespace = registry[len(prefix) :]
        listing = yield from execute_batch(
            [command("ZRANGEBYSCORE", registry, "-inf", "+inf", "WITHSCORES")]
        )
        raise_first_error(listing)
        flat = list(listing[0] or [])
        if flat and isinstance(flat[0], (list, tuple)):
            raw_pairs = [(m, s) for m, s in flat]
        else:
            raw_pairs = [(flat[i], flat[i + 1]) for i in range(0, len(flat) - 1, 2)]
        pairs = _readable_pairs(ctx, raw_pairs)
        for start in range(0, len(pairs), _CHUNK):
            chunk = pairs[start : start + _CHUNK]
            located = yield from execute_batch(
                [Command(("HMGET", ctx.keys.memory(m), L.F_AGENT, L.F_THREAD)) for m, _ in chunk]
            )
            raise_first_error([r for r in located if not isinstance(r, WrongTypeError)])
            commands = []
            for (memory_id, score), values in zip(chunk, located, strict=True):
                try:
                    if isinstance(values, WrongTypeError):
                        raise values
                    agent, thread = (optional_text(v) for v in (values or [None, None]))
                except (WrongTypeError, ReplyParseError) as exc:
                    unreadable(ctx, memory_id, f"{exc} (left out of the agent/thread indexes)")
                    continue
                for index in ctx.keys.member_indexes(namespace, agent, thread):
                    commands.append(command("ZADD", index, _score(score), memory_id))
            done = yield from execute_batch(commands)
            raise_first_error(done)
    marked = yield from execute_batch([command("HSET", ctx.keys.meta, META_FIELD, VERSION)])
    raise_first_error(marked)
    return True


def _readable_pairs(ctx: StoreContext, raw: list[tuple[object, object]]) -> list[tuple[str, str]]:
    """The registry's (id, score) pairs; an entry that is not UTF-8 is logged, counted and
    skipped, so one damaged entry does not stop the indexing (and every call) of the
    store."""
    pairs: list[tuple[str, str]] = []
    for member, score in raw:
        try:
            pairs.append((text(member), text(score)))
        except ReplyParseError:
            unreadable(ctx, repr(member), "its registry entry is not valid UTF-8")
    return pairs


def _score(raw: str) -> str:
    return "+inf" if raw.lower() in {"inf", "+inf"} else raw
