"""``ensure_index``: detect the server, pick the backend, check the store identity."""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import TypeVar

from agent_memory.backends.context import StoreContext
from agent_memory.backends.ft import FtBackend
from agent_memory.backends.portable import PortableBackend
from agent_memory.core.effects import Operation, command, execute, execute_batch
from agent_memory.core.replies import integer, pairs, raise_first_error, text
from agent_memory.errors import (
    CapabilityError,
    IndexMismatchError,
)
from agent_memory.schema.layout import SCHEMA_VERSION
from agent_memory.search.dialect import Dialect, detect_dialect
from agent_memory.store.config import publish_config
from agent_memory.store.ops.embedding import call_embedder, checked_embedding
from agent_memory.store.ops.membership import ensure_member_indexes
from agent_memory.store.ops.namespaces import mark_listed

_PROBE_TEXT = "agent-memory dimension probe"
_ENSURE_WAIT_SECONDS = 30.0  # an embedder's first call (the dimension probe) may load a model

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class IndexStatus:
    """What :meth:`MemoryStore.ensure_index` found or created.

    Attributes:
        backend: ``"ft"``, ``"portable"`` or ``"inprocess"``.
        dialect: the detected search dialect (``family == "none"`` without a module),
            capped to the valkey-search 1.0.2 baseline with ``ft_dialect="baseline"``.
        dim: the embedding dimension of the store.
        created: the index (or store identity) was created by this call.
        features: the optional server features the store uses beyond the valkey-search
            1.0.2 dialect (``"hybrid_policy"``, ``"native_text"``); empty on valkey-search,
            without a search module and with ``ft_dialect="baseline"``.
        adopted: foreign memories (written by BetterDB agent-memory into the store's
            index) this call adopted; see :meth:`MemoryStore.adopt_foreign`.
    """

    backend: str
    dialect: Dialect
    dim: int
    created: bool
    features: tuple[str, ...] = ()
    adopted: int = 0


def _read_dim(embed: object) -> object:
    return getattr(embed, "dim", None)


def _discover_dim(ctx: StoreContext) -> Operation[int]:
    embed = ctx.settings.embed
    declared: object
    if isinstance(inspect.getattr_static(type(embed), "dim", None), property):
        # A property may do I/O (the HTTP embedder's probe request): read like a call
        # of the embedder, off the event loop, its errors wrapped.
        declared = yield from call_embedder(_read_dim, embed, what="embed")
    else:
        declared = getattr(embed, "dim", None)
    if isinstance(declared, int) and not isinstance(declared, bool) and declared > 0:
        return declared
    vector = yield from call_embedder(ctx.settings.embed, _PROBE_TEXT, what="embed")
    return int(checked_embedding(vector, None).size)


def _check_identity(ctx: StoreContext, dim: int) -> Operation[tuple[bool, int]]:
    """Record (or verify) schema version, width and embedder in ``{name}:__mem_meta``.

    The embedder is identified by its ``id`` attribute when it has one (the built-in
    embedders do): two models of the same width would otherwise mix vector spaces
    silently.
    """
    meta_key = ctx.keys.meta
    embedder_id = getattr(ctx.settings.embed, "id", None)
    commands = [
        command("HSETNX", meta_key, "dim", str(dim)),
        command("HSETNX", meta_key, "schema_version", str(SCHEMA_VERSION)),
        command("HSETNX", meta_key, "metric", "COSINE"),
    ]
    if isinstance(embedder_id, str) and embedder_id:
        commands.append(command("HSETNX", meta_key, "embedder", embedder_id))
    replies = yield from execute_batch([*commands, command("HGETALL", meta_key)])
    raise_first_error(replies)
    meta = {k: text(v) for k, v in pairs(replies[-1]).items()}
    stored_dim = integer(meta.get("dim", dim))
    if stored_dim != dim:
        raise IndexMismatchError(
            f"store {ctx.keys.name!r} holds {stored_dim}-dimensional vectors but the "
            f"embedder produces {dim}; mixing vector spaces would make recall meaningless"
        )
    stored_embedder = meta.get("embedder")
    if (
        isinstance(embedder_id, str)
        and embedder_id
        and stored_embedder is not None
        and stored_embedder != embedder_id
    ):
        raise IndexMismatchError(
            f"store {ctx.keys.name!r} was written with embedder {stored_embedder!r}, not "
            f"{embedder_id!r}; its vectors live in another space (use the same embedder, or "
            "export and import_records(..., reembed=True) into a new store)"
        )
    ctx.embedder_id = stored_embedder or None  # what exports name and imports check
    stored_version = integer(meta.get("schema_version", SCHEMA_VERSION))
    if stored_version > SCHEMA_VERSION:
        raise IndexMismatchError(
            f"store {ctx.keys.name!r} was written with schema version {stored_version}, "
            f"newer than this library's {SCHEMA_VERSION}; upgrade agent-memory"
        )
    return bool(integer(replies[0])), stored_version


def ensure_index(ctx: StoreContext) -> Operation[IndexStatus]:
    """Operation behind ``ensure_index()`` (idempotent)."""
    dialect = yield from detect_dialect()
    dim = yield from _discover_dim(ctx)
    ctx.dim = dim
    choice = ctx.settings.backend_choice
    if choice == "auto":
        choice = "ft" if dialect.has_search else "portable"
    if choice == "ft" and not dialect.has_search:
        raise CapabilityError(
            "backend='ft' needs a search module (valkey-search or RediSearch) but the "
            "server has none; use backend='auto' or 'portable'"
        )
    created, version = yield from _check_identity(ctx, dim)
    yield from publish_config(ctx)
    yield from ensure_member_indexes(ctx, fresh=created)
    if created:
        yield from mark_listed(ctx)
    if ctx.settings.in_process:
        choice = "inprocess"
    if ctx.settings.ft_dialect == "baseline" and dialect.has_search:
        dialect = dialect.capped()
    ctx.dialect = dialect
    backend = ctx.backend
    if backend is None or backend.name != choice:
        backend = FtBackend() if choice == "ft" else PortableBackend(choice)
    created_index = yield from backend.prepare(ctx)
    if version < SCHEMA_VERSION:  # upgraded in place by prepare: older code must not write
        yield from execute("HSET", ctx.keys.meta, "schema_version", str(SCHEMA_VERSION))
    ctx.backend = backend
    ctx.identity_stale = False
    adopted = 0
    if choice == "ft":
        # Imported here: adoption writes through the import path, which ensures first.
        from agent_memory.store.ops.adopt import adopt_if_present

        adopted = yield from adopt_if_present(ctx)
    return IndexStatus(
        backend=choice,
        dialect=dialect,
        dim=dim,
        created=created or created_index,
        features=dialect.features if choice == "ft" else (),
        adopted=adopted,
    )


def ensure_ready(ctx: StoreContext) -> Operation[None]:
    """Run :func:`ensure_index` once, lazily, before the first operation that needs it.

    Operations started together on a fresh store wait (polling) for the one running it
    rather than each detecting the server and building a backend; past a deadline, or
    when that one failed, the next runs it itself.
    """

    def needed() -> bool:
        return ctx.backend is None or ctx.dim is None or ctx.identity_stale

    while True:
        yield from ctx.ensuring.wait(needed)
        if not needed():
            return
        if ctx.ensuring.claim(needed, deadline=_ENSURE_WAIT_SECONDS):
            yield from ctx.ensuring.claimed(ensure_index(ctx))
            return
        # Another thread claimed it between the wait and the claim: wait for that one
        # (or it is done now).


def ensured(ctx: StoreContext, op: Operation[T]) -> Operation[T]:
    """``op``, after :func:`ensure_ready` (for operations the backends also use, which
    cannot import this module)."""
    yield from ensure_ready(ctx)
    result = yield from op
    return result
