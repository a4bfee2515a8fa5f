"""The one place that knows the ``valkey`` and ``redis`` client packages.

Both packages share an API (valkey-py is a fork of redis-py): ``execute_command``,
``pipeline(transaction=...)`` and ``execute(raise_on_error=False)``. This module wraps a
client of either package, sync or asyncio, standalone or cluster, behind two tiny
executors, and maps the packages' exceptions onto :mod:`agent_memory.errors`.
"""

from __future__ import annotations

import contextlib
import hashlib
import inspect
import random
from collections.abc import Iterator
from functools import lru_cache
from typing import Any

from agent_memory.core.effects import Batch, Command, ScanKeys
from agent_memory.core.wire import AsyncLane, SyncLane
from agent_memory.errors import (
    AgentMemoryError,
    CapabilityError,
    InvalidInputError,
    OperationTimeoutError,
    ServerResponseError,
    ServerUnavailableError,
    WrongTypeError,
)

# Reply decoding is switched off per command with this option of redis-py/valkey-py
# (a public module constant in both packages, used for binary replies such as DUMP).
_NEVER_DECODE = "NEVER_DECODE"

_UNAVAILABLE_NAMES = frozenset(
    {
        "ConnectionError",
        "BusyLoadingError",
        "AuthenticationError",
        "ReadOnlyError",
        "MasterDownError",
        "ClusterDownError",
        "TryAgainError",
        "MaxConnectionsError",
        "AuthenticationWrongNumberOfArgsError",
        "ClusterError",
    }
)


_CLUSTER_CLIENT_NAMES = frozenset({"ValkeyClusterException", "RedisClusterException"})
_NO_REACHABLE_NODE = "cannot be connected"


def map_client_error(exc: BaseException, *, command: str | None = None) -> AgentMemoryError:
    """Translate an exception of a client package (or the OS) into the library's hierarchy."""
    if isinstance(exc, AgentMemoryError):
        return exc
    names = {cls.__name__ for cls in type(exc).__mro__}
    where = f" (during {command})" if command else ""
    if "TimeoutError" in names:
        return OperationTimeoutError(f"server did not answer in time{where}: {exc}")
    if names & _UNAVAILABLE_NAMES or isinstance(exc, OSError):
        return ServerUnavailableError(f"server unavailable{where}: {exc}")
    if names & _CLUSTER_CLIENT_NAMES and _NO_REACHABLE_NODE in str(exc):
        # The cluster client's generic exception, raised when refreshing its view of
        # the cluster finds no node to ask (during an outage): unavailability.
        return ServerUnavailableError(f"server unavailable{where}: {exc}")
    if isinstance(exc, (AttributeError, KeyError, TypeError)) and _in_cluster_client(exc):
        # The cluster clients of valkey-py and redis-py can trip over a node they just
        # dropped while a node is down (``get_default_node()`` is None, say): that is
        # the outage showing, not a bad request.
        return ServerUnavailableError(
            f"server unavailable{where}: the cluster client lost a node ({exc!r})"
        )
    if "NoScriptError" in names:
        return ServerResponseError(f"NOSCRIPT{where}: {exc}", command=command)
    if "ResponseError" in names and str(exc).startswith("WRONGTYPE"):
        return WrongTypeError(f"server error{where}: {exc}", command=command)
    if "ResponseError" in names or "DataError" in names:
        return ServerResponseError(f"server error{where}: {exc}", command=command)
    if isinstance(exc, UnicodeDecodeError):
        return ServerResponseError(
            f"binary reply could not be decoded{where}; use a client with "
            f"decode_responses=False for this operation: {exc}",
            command=command,
        )
    return ServerResponseError(f"unexpected client error{where}: {exc!r}", command=command)


def _in_cluster_client(exc: BaseException) -> bool:
    """Whether ``exc`` was raised inside a client package's cluster module."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is None:
        return False
    module = str(tb.tb_frame.f_globals.get("__name__", ""))
    return module.split(".", maxsplit=1)[0] in {"valkey", "redis"} and "cluster" in module


@contextlib.contextmanager
def map_client_errors(command: str | None = None) -> Iterator[None]:
    """Re-raise client-package exceptions as library exceptions (chained)."""
    try:
        yield
    except AgentMemoryError:
        raise
    except Exception as exc:
        raise map_client_error(exc, command=command) from exc


def is_async_client(client: Any) -> bool:
    """True for ``valkey.asyncio`` / ``redis.asyncio`` clients (and in-process async ones)."""
    execute = getattr(client, "execute_command", None)
    if execute is None:
        raise InvalidInputError(
            f"client {type(client).__name__} has no execute_command(); pass a valkey or "
            "redis client",
            field="client",
        )
    return inspect.iscoroutinefunction(execute)


def is_cluster_client(client: Any) -> bool:
    """True for ``ValkeyCluster`` / ``RedisCluster`` (sync or async)."""
    return "Cluster" in type(client).__name__ and hasattr(client, "get_primaries")


_RAW = {_NEVER_DECODE: True}
_DECODED: dict[str, Any] = {}


# Commands without a key: a cluster client cannot route them (its pipeline fails as a
# whole on them), so they are sent one by one to a node we pick. The search commands
# name an index, not a key; valkey-search's coordinator serves them from any primary
# (an index created on one is created on all, a search fans out to every shard).
_KEYLESS = frozenset({"MODULE", "FT._LIST", "FT.CONFIG", "PING", "INFO", "CLUSTER"})


def _keyless(cmd: Command) -> bool:
    name = cmd.name.upper()
    return name in _KEYLESS or name.startswith("FT.")


def _route(client: Any, cmd: Command) -> dict[str, Any]:
    """The node a cluster client must send a keyless command to (``{}``: let the
    client route it by its key). A command naming its ``node`` goes to that primary,
    search commands to any primary (a replica would answer them only in READONLY
    mode), the rest to any node."""
    if not _keyless(cmd) or not is_cluster_client(client):
        return {}
    if cmd.node is not None:
        primaries = sorted(client.get_primaries(), key=lambda node: str(node.name))
        return {"target_nodes": primaries[cmd.node % len(primaries)]}
    if cmd.name.upper().startswith("FT."):
        return {"target_nodes": random.choice(client.get_primaries())}
    return {"target_nodes": client.get_random_node()}


def check_atomic_batch(client: Any, b: Batch) -> None:
    """Refuse an atomic batch on a cluster client that cannot send one properly.

    Raises:
        CapabilityError: valkey-py's cluster clients have no transactions, and redis-py's
            asyncio cluster client runs each command of one in a thread on an event loop
            of its own (blocking ours, and leaving a connection bound to a loop that is
            closed); only redis-py's blocking cluster client sends ``MULTI``/``EXEC`` to
            the slot's node. An operation needing one step on a cluster is a script.
    """
    if not b.atomic or not is_cluster_client(client):
        return
    module = type(client).__module__
    if module.startswith("valkey") or module.startswith("redis.asyncio"):
        first = b.commands[0].name if b.commands else "empty"
        raise CapabilityError(
            f"an atomic batch ({first} ...) needs MULTI/EXEC, which {module}."
            f"{type(client).__name__} does not support properly; send it as one script"
        )


def _split_cluster_batch(client: Any, b: Batch) -> tuple[list[int], list[int]]:
    """Indexes of the keyless commands of a batch on a cluster client, and the others."""
    if b.atomic or not is_cluster_client(client):
        return [], list(range(len(b.commands)))
    keyless = [i for i, cmd in enumerate(b.commands) if _keyless(cmd)]
    return keyless, [i for i in range(len(b.commands)) if i not in keyless]


@lru_cache(maxsize=256)
def script_sha(source: str | bytes) -> str:
    """The SHA1 a server names a script by (``EVALSHA``)."""
    raw = source.encode("utf-8") if isinstance(source, str) else source
    return hashlib.sha1(raw, usedforsecurity=False).hexdigest()


def _by_sha(cmd: Command) -> Command:
    """``EVAL source ...`` as ``EVALSHA sha ...`` (the script body is sent only when the
    server does not know it yet: see :func:`_unknown_scripts`)."""
    if cmd.name.upper() != "EVAL":
        return cmd
    return Command(("EVALSHA", script_sha(cmd.args[1]), *cmd.args[2:]), binary=cmd.binary)


def _is_noscript(reply: Any) -> bool:
    return isinstance(reply, BaseException) and (
        "NoScriptError" in {c.__name__ for c in type(reply).__mro__}
        or str(reply).startswith("NOSCRIPT")
    )


def _unknown_scripts(b: Batch, replies: list[Any]) -> list[int]:
    """Indexes of the batch's scripts the server did not know (sent again as EVAL), and
    of the later commands that must follow them (``Command.after_scripts``), in order."""
    unknown = [
        i
        for i, reply in enumerate(replies)
        if _is_noscript(reply) and b.commands[i].name.upper() == "EVAL"
    ]
    if not unknown:
        return unknown
    following = [i for i in range(unknown[0] + 1, len(b.commands)) if b.commands[i].after_scripts]
    return sorted({*unknown, *following})


class SyncExecutor:
    """Runs effects on a blocking client.

    With ``raw_replies`` every reply arrives undecoded, whatever the client's
    ``decode_responses``: the caller decodes each value itself, so one value that is not
    valid UTF-8 spoils only what it belongs to, never a whole reply.
    """

    __slots__ = ("_lane", "_raw", "client")

    def __init__(self, client: Any, *, raw_replies: bool = False) -> None:
        self.client = client
        self._raw = raw_replies
        self._lane = SyncLane.of(client)

    def _options(self, cmd: Command) -> dict[str, Any]:
        return _RAW if cmd.binary or self._raw else _DECODED

    def command(self, cmd: Command) -> Any:
        with map_client_errors(cmd.name):
            if cmd.name.upper() == "EVAL":
                try:
                    return self._one(_by_sha(cmd))
                except Exception as exc:
                    if not _is_noscript(exc):
                        raise
            return self._one(cmd)

    def _one(self, cmd: Command) -> Any:
        replies = self._on_lane(Batch((cmd,)))
        if replies is None:
            route = _route(self.client, cmd)
            return self.client.execute_command(*cmd.args, **route, **self._options(cmd))
        if isinstance(replies[0], BaseException):
            raise replies[0]
        return replies[0]

    def _on_lane(self, b: Batch) -> list[Any] | None:
        """The batch's replies over the client's connection directly (``None``: the
        client's own API must run it; see :mod:`agent_memory.core.wire`)."""
        lane = self._lane
        if lane is None:
            return None
        prepared = lane.prepare(b, raw_replies=self._raw)
        return None if prepared is None else lane.run(prepared)

    def batch(self, b: Batch) -> list[Any]:
        replies = self._batch(b if b.atomic else _sha_batch(b))
        retry = _unknown_scripts(b, replies)
        if retry:
            again = self._batch(Batch(tuple(b.commands[i] for i in retry)))
            for i, reply in zip(retry, again, strict=True):
                replies[i] = reply
        return _map_batch_errors(b, replies)

    def _batch(self, b: Batch) -> list[Any]:
        check_atomic_batch(self.client, b)
        with map_client_errors(b.commands[0].name if b.commands else None):
            fast = self._on_lane(b)
        if fast is not None:
            return fast
        keyless, keyed = _split_cluster_batch(self.client, b)
        replies: list[Any] = [None] * len(b.commands)
        for i in keyless:
            cmd = b.commands[i]
            try:
                route = _route(self.client, cmd)
                replies[i] = self.client.execute_command(*cmd.args, **route, **self._options(cmd))
            except Exception as exc:  # noqa: BLE001 - returned like a pipeline error
                replies[i] = exc
        if keyed:
            with map_client_errors(b.commands[keyed[0]].name):
                pipe = self.client.pipeline(transaction=b.atomic)
                for i in keyed:
                    pipe.execute_command(*b.commands[i].args, **self._options(b.commands[i]))
                for i, reply in zip(keyed, pipe.execute(raise_on_error=False), strict=True):
                    replies[i] = reply
        return replies

    def scan(self, scan: ScanKeys) -> list[Any]:
        # scan_iter covers every primary on ValkeyCluster/RedisCluster.
        with map_client_errors("SCAN"):
            options = _RAW if scan.binary else _DECODED
            return list(self.client.scan_iter(match=scan.match, count=scan.count, **options))


class AsyncExecutor:
    """Runs effects on an asyncio client.

    With ``raw_replies`` every reply arrives undecoded, whatever the client's
    ``decode_responses``: the caller decodes each value itself, so one value that is not
    valid UTF-8 spoils only what it belongs to, never a whole reply.
    """

    __slots__ = ("_lane", "_raw", "client")

    def __init__(self, client: Any, *, raw_replies: bool = False) -> None:
        self.client = client
        self._raw = raw_replies
        self._lane = AsyncLane.of(client)

    def _options(self, cmd: Command) -> dict[str, Any]:
        return _RAW if cmd.binary or self._raw else _DECODED

    async def command(self, cmd: Command) -> Any:
        with map_client_errors(cmd.name):
            if cmd.name.upper() == "EVAL":
                try:
                    return await self._one(_by_sha(cmd))
                except Exception as exc:
                    if not _is_noscript(exc):
                        raise
            return await self._one(cmd)

    async def _one(self, cmd: Command) -> Any:
        replies = await self._on_lane(Batch((cmd,)))
        if replies is None:
            if _keyless(cmd) and is_cluster_client(self.client):
                await self.client.initialize()  # it knows no node before its first command
            route = _route(self.client, cmd)
            return await self.client.execute_command(*cmd.args, **route, **self._options(cmd))
        if isinstance(replies[0], BaseException):
            raise replies[0]
        return replies[0]

    async def _on_lane(self, b: Batch) -> list[Any] | None:
        """The batch's replies over the client's connection directly (``None``: the
        client's own API must run it; see :mod:`agent_memory.core.wire`)."""
        lane = self._lane
        if lane is None:
            return None
        prepared = lane.prepare(b, raw_replies=self._raw)
        return None if prepared is None else await lane.run(prepared)

    async def batch(self, b: Batch) -> list[Any]:
        replies = await self._batch(b if b.atomic else _sha_batch(b))
        retry = _unknown_scripts(b, replies)
        if retry:
            again = await self._batch(Batch(tuple(b.commands[i] for i in retry)))
            for i, reply in zip(retry, again, strict=True):
                replies[i] = reply
        return _map_batch_errors(b, replies)

    async def _batch(self, b: Batch) -> list[Any]:
        check_atomic_batch(self.client, b)
        with map_client_errors(b.commands[0].name if b.commands else None):
            fast = await self._on_lane(b)
        if fast is not None:
            return fast
        keyless, keyed = _split_cluster_batch(self.client, b)
        replies: list[Any] = [None] * len(b.commands)
        if keyless:
            # An asyncio cluster client knows no node before its first command or this
            # (idempotent) call, so it could not pick one for a keyless command.
            with map_client_errors(b.commands[keyless[0]].name):
                await self.client.initialize()
        for i in keyless:
            cmd = b.commands[i]
            try:
                route = _route(self.client, cmd)
                replies[i] = await self.client.execute_command(
                    *cmd.args, **route, **self._options(cmd)
                )
            except Exception as exc:  # noqa: BLE001 - returned like a pipeline error
                replies[i] = exc
        if keyed:
            with map_client_errors(b.commands[keyed[0]].name):
                pipe = self.client.pipeline(transaction=b.atomic)
                for i in keyed:
                    pipe.execute_command(*b.commands[i].args, **self._options(b.commands[i]))
                results = await pipe.execute(raise_on_error=False)
                for i, reply in zip(keyed, results, strict=True):
                    replies[i] = reply
        return replies

    async def scan(self, scan: ScanKeys) -> list[Any]:
        with map_client_errors("SCAN"):
            options = _RAW if scan.binary else _DECODED
            keys = self.client.scan_iter(match=scan.match, count=scan.count, **options)
            return [key async for key in keys]


def _sha_batch(b: Batch) -> Batch:
    """A non-atomic batch with its scripts sent by SHA (inside MULTI/EXEC an unknown
    script would fail alone while the rest commits, so atomic batches keep EVAL)."""
    return Batch(tuple(_by_sha(cmd) for cmd in b.commands))


def _map_batch_errors(b: Batch, replies: list[Any]) -> list[Any]:
    return [
        map_client_error(reply, command=cmd.name) if isinstance(reply, BaseException) else reply
        for cmd, reply in zip(b.commands, replies, strict=True)
    ]
