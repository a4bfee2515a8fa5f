"""Commands written straight to a pooled connection of a standalone client.

A valkey-py/redis-py pipeline costs about 0.2 ms of Python per round trip on top of the
server's work: a ``Pipeline`` object per batch, every argument packed by a Python loop,
the socket timeout wrapped in a task, a response-callback lookup per reply. A recall
makes two round trips and a ``remember`` one, so that overhead was a tenth of either.

A :class:`Lane` does what the client's own ``execute_command`` does, with the client's
own connection pool, connections, retry policy, socket timeouts and health checks, but
for a whole batch at once: it packs the commands in one go (with the compiled packer of
``libvalkey`` or ``hiredis`` when either is installed, else a small Python one), sends
them with the connection's ``send_packed_command`` and reads each reply with its
``read_response``. A reply the client package rewrites (``HGETALL`` into a dict, ``SET``
into a bool...) goes through the client's own response callback, as its
``parse_response`` does; an error reply comes back as the exception instance a
pipeline returns with ``raise_on_error=False``.

It is used only where the result is the same as the client's: standalone clients of
the ``valkey`` or ``redis`` package (a cluster client routes by slot; a
single-connection client serialises through its own lock; client-side caching answers
from its cache), UTF-8 encoding and non-transactional batches. Everything else goes
through ``execute_command`` and pipelines as before. One difference remains: the
client package's own instrumentation (redis-py's OpenTelemetry command metrics) does
not see these commands; the library's own spans and metrics do.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from agent_memory.core.effects import Arg, Batch, Command

Packer = Callable[[tuple[Arg, ...]], bytes]


def pack_args(args: tuple[Arg, ...]) -> bytes:
    """One command in RESP, as the client packages encode arguments (``str`` as UTF-8,
    numbers by ``repr``); raises ``TypeError`` for anything else, as the compiled
    packers do."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, bytes):
            value = arg
        elif isinstance(arg, str):
            value = arg.encode("utf-8")
        elif isinstance(arg, bool):
            raise TypeError("a command argument must be str, bytes, int or float, not bool")
        elif isinstance(arg, (int, float)):
            value = repr(arg).encode("ascii")
        else:
            raise TypeError(
                f"a command argument must be str, bytes, int or float, not {type(arg).__name__}"
            )
        parts.append(b"$%d\r\n%s\r\n" % (len(value), value))
    return b"".join(parts)


def _compiled_packer() -> Packer | None:
    for module in ("libvalkey", "hiredis"):
        try:
            pack = getattr(importlib.import_module(module), "pack_command", None)
        except ImportError:
            continue
        if callable(pack):
            return _checked(pack)
    return None


def _checked(pack: Callable[[Any], bytes]) -> Packer:
    """The compiled packer, with the one input it accepts and the client packages
    refuse (``bool``, which they reject with a DataError) refused first."""

    def packer(args: tuple[Arg, ...]) -> bytes:
        if bool in set(map(type, args)):
            raise TypeError("a command argument must not be a bool")
        return pack(args)

    return packer


PACK: Packer = _compiled_packer() or pack_args


def pack(commands: Sequence[Command]) -> bytes | None:
    """The commands in RESP, ready to write; ``None`` when an argument cannot be packed
    (the client's own path then reports it in its own words)."""
    try:
        return b"".join([PACK(cmd.args) for cmd in commands])
    except (TypeError, ValueError, UnicodeError):
        return None


Callback = Callable[..., Any]


class Prepared(NamedTuple):
    """A batch ready for a lane: packed, with each reply's decoding and callback."""

    first: str  # the first command's name (valkey-py's pool asks for one)
    packed: bytes
    raw: list[bool]  # per command: read the reply undecoded
    callbacks: list[Callback | None]  # per command: the client's response callback


_PACKAGES = frozenset({"valkey", "redis"})


def _package(client: Any) -> str | None:
    package = type(client).__module__.split(".", maxsplit=1)[0]
    return package if package in _PACKAGES else None


def _eligible(client: Any) -> bool:
    """Whether the client's own ``execute_command`` would do exactly what a lane does."""
    if _package(client) is None or "Cluster" in type(client).__name__:
        return False
    if getattr(client, "single_connection_client", False) or getattr(client, "connection", None):
        return False  # one connection, serialised on the client's lock (asyncio: set lazily)
    pool = getattr(client, "connection_pool", None)
    kwargs = getattr(pool, "connection_kwargs", None)
    if not isinstance(kwargs, dict):
        return False
    if any(kwargs.get(name) for name in ("cache_enabled", "cache", "cache_config")):
        return False  # client-side caching answers reads from its cache
    encoding = str(kwargs.get("encoding", "utf-8")).lower().replace("_", "-")
    return encoding in {"utf-8", "utf8"} and kwargs.get("encoding_errors", "strict") == "strict"


class _LaneBase:
    """What both lanes share: which commands they take and how a failure is handled."""

    __slots__ = ("_client", "_name_arg", "_pool", "_response_error", "_strict")

    def __init__(self, client: Any) -> None:
        package = _package(client)
        assert package is not None
        self._client = client
        self._pool = client.connection_pool
        self._response_error: type[Exception] = importlib.import_module(
            f"{package}.exceptions"
        ).ResponseError
        # valkey-py (and redis-py before 6) raise a failure the connection is not set
        # to retry on; redis-py 6+ leaves that to the retry policy alone.
        self._strict = hasattr(type(client), "_disconnect_raise")
        parameters = list(inspect.signature(self._pool.get_connection).parameters.values())
        self._name_arg = bool(parameters) and parameters[0].default is inspect.Parameter.empty

    def prepare(self, b: Batch, *, raw_replies: bool) -> Prepared | None:
        """The batch packed for :meth:`run` (``None``: the client's own API must run
        it; ``raw_replies``: every reply undecoded, else only binary commands'). The
        client's response callbacks are read for each batch: one set on the client
        later counts too."""
        if b.atomic or not b.commands:
            return None
        packed = pack(b.commands)
        if packed is None:
            return None
        # The client's dict is case-insensitive; command names are str (Command.name).
        callbacks = self._client.response_callbacks
        return Prepared(
            b.commands[0].name,
            packed,
            [c.binary or raw_replies for c in b.commands],
            [callbacks.get(c.name.upper()) for c in b.commands],
        )

    def _connection_args(self, batch: Prepared) -> tuple[str, ...]:
        return (batch.first,) if self._name_arg else ()

    def _retryable(self, conn: Any, error: Exception) -> bool:
        if not self._strict:
            return True
        allowed: list[type[Exception]] = getattr(conn, "retry_on_error", None) or []
        return isinstance(error, tuple(allowed))


class AsyncLane(_LaneBase):
    """A lane on an asyncio client (see the module docstring)."""

    __slots__ = ()

    @classmethod
    def of(cls, client: Any) -> AsyncLane | None:
        """The lane for ``client``, or ``None`` when its own API must be used."""
        return cls(client) if _eligible(client) else None

    async def run(self, batch: Prepared) -> list[Any]:
        """Send the batch and read one reply per command (undecoded where ``batch.raw``
        says so, through the client's response callback where it has one); error
        replies are returned as exception instances."""
        pool = self._pool
        conn = await pool.get_connection(*self._connection_args(batch))
        try:

            async def exchange() -> list[Any]:
                await conn.send_packed_command([batch.packed])
                replies: list[Any] = []
                for undecoded in batch.raw:
                    try:
                        replies.append(await conn.read_response(disable_decoding=undecoded))
                    except self._response_error as exc:
                        replies.append(exc)
                return replies

            async def fail(error: Exception) -> None:
                await conn.disconnect()
                if not self._retryable(conn, error):
                    raise error

            replies: list[Any] = await conn.retry.call_with_retry(exchange, fail)
        except BaseException:
            # Replies may still be in flight (a timeout, a cancelled task): never hand
            # the pool a connection whose next read would return them.
            await conn.disconnect(nowait=True)
            raise
        finally:
            await pool.release(conn)
        out = []
        for raw, callback in zip(replies, batch.callbacks, strict=True):
            reply = raw
            if callback is not None and not isinstance(raw, BaseException):
                reply = callback(raw)
                if inspect.isawaitable(reply):  # an async callback, awaited in order
                    reply = await reply
            out.append(reply)
        return out


def _called_back(replies: list[Any], callbacks: list[Callback | None]) -> list[Any]:
    """Each reply through its command's response callback, as the client's own
    ``parse_response`` does (error replies stay as they are)."""
    return [
        reply if callback is None or isinstance(reply, BaseException) else callback(reply)
        for reply, callback in zip(replies, callbacks, strict=True)
    ]


class SyncLane(_LaneBase):
    """A lane on a blocking client (see the module docstring)."""

    __slots__ = ()

    @classmethod
    def of(cls, client: Any) -> SyncLane | None:
        """The lane for ``client``, or ``None`` when its own API must be used."""
        return cls(client) if _eligible(client) else None

    def run(self, batch: Prepared) -> list[Any]:
        """Send the batch and read one reply per command (undecoded where ``batch.raw``
        says so, through the client's response callback where it has one); error
        replies are returned as exception instances."""
        pool = self._pool
        conn = pool.get_connection(*self._connection_args(batch))
        try:

            def exchange() -> list[Any]:
                conn.send_packed_command([batch.packed])
                replies: list[Any] = []
                for undecoded in batch.raw:
                    try:
                        replies.append(conn.read_response(disable_decoding=undecoded))
                    except self._response_error as exc:
                        replies.append(exc)
                return replies

            def fail(error: Exception) -> None:
                conn.disconnect()
                if not self._retryable(conn, error):
                    raise error

            replies: list[Any] = conn.retry.call_with_retry(exchange, fail)
        except BaseException:
            conn.disconnect()
            raise
        finally:
            pool.release(conn)
        return _called_back(replies, batch.callbacks)
