"""A LangChain ``BaseStore[str, bytes]`` on Valkey/Redis (the ``langchain`` extra).

>>> store = AgentMemoryByteStore.from_url("redis://localhost:6379", name="my_agent")
>>> embedder = CacheBackedEmbeddings.from_bytes_store(embeddings, store, namespace=model)

Each value is one string key ``{name}:kv:{namespace}:{key}``: ``{name}`` is the cache
name, ``{namespace}`` the store's namespace (default ``"default"``) when it is plain
letters, digits, ``_``, ``-`` or ``.`` (up to 128), else ``~`` and 32 hex digits of its
SHA-256, so no namespace can reach into another's keys; ``{key}`` is the LangChain key
verbatim (any text, ``:`` included). Two stores see each other's keys exactly when
their name and namespace are equal.

* ``mget`` / ``mset`` / ``mdelete`` (and ``amget`` / ``amset`` / ``amdelete``): one
  pipelined round trip per call (``GET`` / ``SET [PX ttl]`` / ``UNLINK`` per key, routed per
  slot on a cluster: no multi-key command), nothing sent for an empty list. Values come
  back as the exact bytes stored, whatever the client's ``decode_responses``.
* ``yield_keys(prefix=)`` / ``ayield_keys``: the namespace's keys starting with
  ``prefix``, read with ``SCAN MATCH`` on every primary (in no particular order) when
  iteration starts.
* ``ttl``: lifetime of the values written, in seconds (``None``: kept until deleted).
* A key under the namespace that another writer left and that is not UTF-8 text, or
  that holds another type than a string, fails no call: ``yield_keys`` skips it,
  ``mget`` reads it as absent, and both log it and count it (``corrupt_entries``).

A key that is not valid text raises :class:`InvalidStoreKeyError`, which is both the
library's :class:`~agent_memory.errors.InvalidInputError` and LangChain's
``InvalidKeyException``.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.stores import BaseStore, InvalidKeyException
from prometheus_client import CollectorRegistry

from agent_memory.cache._tier import TierCore
from agent_memory.cache.keys import check_text, glob_escape, tool_segment, ttl_ms
from agent_memory.core import replies
from agent_memory.core.checks import check_str
from agent_memory.core.client_factory import released_on_failure
from agent_memory.core.effects import Command, Operation, execute_batch, scan_keys
from agent_memory.core.replies import raise_first_error
from agent_memory.errors import InvalidInputError, WrongTypeError
from agent_memory.integrations._keys import check_name_for_segment, keys_after
from agent_memory.integrations._runners import Runners, clients_from_url

logger = logging.getLogger(__name__)

DEFAULT_NAMESPACE = "default"
#: The longest key accepted, in UTF-8 bytes.
MAX_KEY_BYTES = 65_536


class InvalidStoreKeyError(InvalidInputError, InvalidKeyException):
    """A key is not a ``str`` of valid Unicode, or is longer than :data:`MAX_KEY_BYTES`
    (both an :class:`~agent_memory.errors.InvalidInputError` and LangChain's
    ``InvalidKeyException``). Nothing was sent."""


def _check_key(key: object, field: str = "key") -> str:
    try:
        return check_str(key, field=field, max_bytes=MAX_KEY_BYTES)
    except InvalidInputError as exc:
        raise InvalidStoreKeyError(str(exc), field=field) from None


SEGMENT = "kv"


class KvCore:
    """The operations of the byte store (pure generators; no I/O).

    Raises:
        InvalidInputError: a bad name, namespace or TTL.
    """

    __slots__ = ("prefix", "tier", "ttl_ms")

    def __init__(self, name: str, namespace: str, ttl: float | None) -> None:
        self.tier = TierCore(name)
        check_name_for_segment(self.tier.layout.name, SEGMENT, hex_keys=False)
        segment = tool_segment(check_text(namespace, field="namespace", max_chars=1024))
        self.prefix = f"{self.tier.layout.name}:{SEGMENT}:{segment}:"
        self.ttl_ms = ttl_ms(ttl)

    def keys_of(self, keys: Sequence[str]) -> list[str]:
        """The server keys of LangChain ``keys``.

        Raises:
            InvalidStoreKeyError: a key is not valid text.
        """
        if isinstance(keys, (str, bytes)) or not isinstance(keys, Sequence):
            raise InvalidInputError("keys must be a list of str", field="keys")
        return [self.prefix + _check_key(key) for key in keys]

    def mget(self, keys: list[str]) -> Operation[list[bytes | None]]:
        got = yield from execute_batch([Command(("GET", key), binary=True) for key in keys])
        # a key another writer gave another type holds no value of ours: read as absent
        # (logged, counted), as a string store's reader would, not a failed call
        foreign = [
            key for key, value in zip(keys, got, strict=True) if isinstance(value, WrongTypeError)
        ]
        if foreign:
            self._unreadable(foreign, "holds another type than a string; read as absent")
        got = [None if isinstance(value, WrongTypeError) else value for value in got]
        raise_first_error(got)
        return [None if value is None else replies.raw_bytes(value) for value in got]

    def _unreadable(self, keys: Sequence[object], why: str) -> None:
        logger.warning("byte store: %d key(s) %s: %.200r", len(keys), why, list(keys))
        self.tier.buffer.note("corrupt_entries", len(keys))

    def mset(self, pairs: list[tuple[str, bytes]]) -> Operation[None]:
        expiry: tuple[int, ...] = () if self.ttl_ms is None else (self.ttl_ms,)
        option: tuple[str, ...] = () if self.ttl_ms is None else ("PX",)
        commands = [Command(("SET", key, value, *option, *expiry)) for key, value in pairs]
        got = yield from execute_batch(commands)
        raise_first_error(got)
        self.tier.note_stored(sum(len(value) for _, value in pairs))

    def mdelete(self, keys: list[str]) -> Operation[None]:
        got = yield from execute_batch([Command(("UNLINK", key)) for key in keys])
        raise_first_error(got)

    def pattern(self, prefix: str | None) -> str:
        """The SCAN glob of the keys starting with ``prefix``.

        Raises:
            InvalidStoreKeyError: ``prefix`` is not valid text.
        """
        start = "" if prefix is None else _check_key(prefix, "prefix")
        return glob_escape(self.prefix + start) + "*"

    def keys(self, pattern: str) -> Operation[list[str]]:
        found = yield from scan_keys(pattern, binary=True)
        keys, unreadable = keys_after(found, self.prefix)
        if unreadable:
            bad = [k for k in found if not _is_utf8(k)]
            self._unreadable(bad, "are not UTF-8 text; skipped")
        return keys


def _is_utf8(raw: object) -> bool:
    try:
        bytes(raw).decode("utf-8")  # type: ignore[call-overload]
    except UnicodeDecodeError:
        return False
    return True


def _pairs(core: KvCore, key_value_pairs: Sequence[tuple[str, bytes]]) -> list[tuple[str, bytes]]:
    if isinstance(key_value_pairs, (str, bytes)) or not isinstance(key_value_pairs, Sequence):
        raise InvalidInputError("key_value_pairs must be a list of (str, bytes)", field="pairs")
    out: list[tuple[str, bytes]] = []
    for pair in key_value_pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise InvalidInputError("each pair must be a (key, value) tuple", field="pairs")
        key, value = pair
        if not isinstance(value, (bytes, bytearray)):
            raise InvalidInputError(
                f"values must be bytes, got {type(value).__name__}", field="value"
            )
        out.append((core.keys_of([key])[0], bytes(value)))
    return out


class AgentMemoryByteStore(BaseStore[str, bytes]):
    """LangChain byte store on Valkey/Redis, standalone or cluster (see the module doc).

    The constructor does no I/O.

    Args:
        client: a blocking ``valkey``/``redis`` client, serving the blocking methods (and
            the async ones in a worker thread when ``async_client`` is not given).
        async_client: a ``valkey.asyncio``/``redis.asyncio`` client, serving the async
            methods.
        name: the cache name (key prefix).
        namespace: the store's namespace inside ``name`` (any non-empty text).
        ttl: lifetime of the values written, in seconds (``None``: no expiry).
        registry: a ``prometheus_client.CollectorRegistry`` for the operations' metrics.

    Raises:
        InvalidInputError: no client or one of the wrong kind, a bad name, namespace or TTL.
    """

    def __init__(
        self,
        *,
        client: Any = None,
        async_client: Any = None,
        name: str,
        namespace: str = DEFAULT_NAMESPACE,
        ttl: float | None = None,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self._core = KvCore(name, namespace, ttl)
        self._namespace = namespace
        self._runners = Runners(
            client,
            async_client,
            name=name,
            tier="kv",
            core=self._core,
            owner=type(self).__name__,
            registry=registry,
        )

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        name: str,
        namespace: str = DEFAULT_NAMESPACE,
        ttl: float | None = None,
        **client_options: Any,
    ) -> AgentMemoryByteStore:
        """A store with its own blocking and asyncio clients for ``url`` (closed by
        :meth:`close` / :meth:`aclose`).

        Raises:
            InvalidInputError: a bad URL, client option, name, namespace or TTL.
        """
        client, async_client = clients_from_url(url, **client_options)
        with released_on_failure(client, async_client):  # a bad name, namespace, TTL...
            result = cls(
                client=client, async_client=async_client, name=name, namespace=namespace, ttl=ttl
            )
        result._runners.owned = True
        return result

    @property
    def namespace(self) -> str:
        """The store's namespace."""
        return self._namespace

    def close(self) -> None:
        """Close the blocking client if :meth:`from_url` created it (idempotent)."""
        self._runners.close()

    async def aclose(self) -> None:
        """Close both clients if :meth:`from_url` created them (idempotent)."""
        await self._runners.aclose()

    def mget(self, keys: Sequence[str]) -> list[bytes | None]:
        """The value of each key (``None`` when absent), in one round trip.

        Raises:
            CapabilityError: only an asyncio client was given.
            InvalidStoreKeyError: a key is not valid text.
            InvalidInputError: ``keys`` is not a list.
            AgentMemoryError: a failure of the server (unavailable, timeout, ...).
        """
        server_keys = self._core.keys_of(keys)
        return self._runners.run(lambda: self._core.mget(server_keys))

    async def amget(self, keys: Sequence[str]) -> list[bytes | None]:
        """Async :meth:`mget` (same errors, but never CapabilityError)."""
        server_keys = self._core.keys_of(keys)
        return await self._runners.arun(lambda: self._core.mget(server_keys))

    def mset(self, key_value_pairs: Sequence[tuple[str, bytes]]) -> None:
        """Set each key to its value, in one round trip (the last pair of a key wins).

        Raises:
            CapabilityError: only an asyncio client was given.
            InvalidStoreKeyError: a key is not valid text.
            InvalidInputError: a value that is not bytes, or a malformed pair.
            AgentMemoryError: a failure of the server.
        """
        pairs = _pairs(self._core, key_value_pairs)
        self._runners.run(lambda: self._core.mset(pairs))

    async def amset(self, key_value_pairs: Sequence[tuple[str, bytes]]) -> None:
        """Async :meth:`mset` (same errors, but never CapabilityError)."""
        pairs = _pairs(self._core, key_value_pairs)
        await self._runners.arun(lambda: self._core.mset(pairs))

    def mdelete(self, keys: Sequence[str]) -> None:
        """Delete the keys (missing ones are ignored), in one round trip.

        Raises:
            CapabilityError: only an asyncio client was given.
            InvalidStoreKeyError: a key is not valid text.
            AgentMemoryError: a failure of the server.
        """
        server_keys = self._core.keys_of(keys)
        self._runners.run(lambda: self._core.mdelete(server_keys))

    async def amdelete(self, keys: Sequence[str]) -> None:
        """Async :meth:`mdelete` (same errors, but never CapabilityError)."""
        server_keys = self._core.keys_of(keys)
        await self._runners.arun(lambda: self._core.mdelete(server_keys))

    def yield_keys(self, *, prefix: str | None = None) -> Iterator[str]:
        """The namespace's keys starting with ``prefix`` (all when ``None``), in no
        particular order; the SCAN runs when iteration starts.

        Raises (when iterated):
            CapabilityError: only an asyncio client was given.
            InvalidStoreKeyError: ``prefix`` is not valid text.
            AgentMemoryError: a failure of the server.
        """
        pattern = self._core.pattern(prefix)
        yield from self._runners.run(lambda: self._core.keys(pattern))

    async def ayield_keys(self, *, prefix: str | None = None) -> AsyncIterator[str]:
        """Async :meth:`yield_keys` (same errors, but never CapabilityError)."""
        pattern = self._core.pattern(prefix)
        for key in await self._runners.arun(lambda: self._core.keys(pattern)):
            yield key


__all__ = [
    "DEFAULT_NAMESPACE",
    "MAX_KEY_BYTES",
    "AgentMemoryByteStore",
    "InvalidStoreKeyError",
    "KvCore",
]
