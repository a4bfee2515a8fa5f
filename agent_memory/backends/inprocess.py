"""An in-process stand-in for a Valkey server, for users' own unit tests.

``InProcessClient`` (blocking) and ``AsyncInProcessClient`` (asyncio) implement the
subset of commands this library sends, with the reply shapes of redis-py in RESP2 with
``decode_responses=True``. The memory store runs its portable backend over them, so
ranking, filters, TTLs and capacity behave exactly as on a server without a search
module. Scripts are not interpreted: each script the library sends has a Python twin.

It is not a general-purpose fake server: commands outside that subset raise
:class:`~agent_memory.errors.ServerResponseError`. Two clients built on one
:class:`Keyspace` share data (as two connections to one server would).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agent_memory.backends.inprocess_keyspace import Keyspace
from agent_memory.backends.inprocess_scripts import register_script_twin
from agent_memory.errors import ServerResponseError

__all__ = [
    "AsyncInProcessClient",
    "InProcessClient",
    "Keyspace",
    "is_in_process",
    "register_script_twin",
]


class _Pipeline:
    def __init__(self, keyspace: Keyspace) -> None:
        self._keyspace = keyspace
        self._queued: list[tuple[Any, ...]] = []

    def execute_command(self, *args: Any, **options: Any) -> _Pipeline:
        self._queued.append(args)
        return self

    def _run(self, raise_on_error: bool) -> list[Any]:
        replies: list[Any] = []
        with self._keyspace.lock:  # a pipeline runs without interleaving, like MULTI
            for args in self._queued:
                try:
                    replies.append(self._keyspace.execute(args))
                except ServerResponseError as exc:
                    if raise_on_error:
                        raise
                    replies.append(exc)
        self._queued = []
        return replies


class _SyncPipeline(_Pipeline):
    def execute(self, raise_on_error: bool = True) -> list[Any]:
        return self._run(raise_on_error)


class _AsyncPipeline(_Pipeline):
    async def execute(self, raise_on_error: bool = True) -> list[Any]:
        return self._run(raise_on_error)


class InProcessClient:
    """A blocking in-process "server connection" (see module docstring)."""

    def __init__(self, keyspace: Keyspace | None = None) -> None:
        self.keyspace = keyspace or Keyspace()

    def execute_command(self, *args: Any, **options: Any) -> Any:
        return self.keyspace.execute(args)

    def pipeline(self, transaction: bool = True) -> _SyncPipeline:
        return _SyncPipeline(self.keyspace)

    def scan_iter(self, match: str = "*", count: int = 1000, **options: Any) -> Iterator[Any]:
        with self.keyspace.lock:
            return iter(_scanned(self.keyspace.keys(match), options))

    def close(self) -> None:
        """Nothing to release."""


class AsyncInProcessClient:
    """An asyncio in-process "server connection" (see module docstring)."""

    def __init__(self, keyspace: Keyspace | None = None) -> None:
        self.keyspace = keyspace or Keyspace()

    async def execute_command(self, *args: Any, **options: Any) -> Any:
        return self.keyspace.execute(args)

    def pipeline(self, transaction: bool = True) -> _AsyncPipeline:
        return _AsyncPipeline(self.keyspace)

    async def scan_iter(self, match: str = "*", count: int = 1000, **options: Any) -> Any:
        with self.keyspace.lock:
            keys = _scanned(self.keyspace.keys(match), options)
        for key in keys:
            yield key

    async def aclose(self) -> None:
        """Nothing to release."""


def _scanned(keys: list[str], options: dict[str, Any]) -> list[Any]:
    """The keys a ``SCAN`` returns: ``str``, or their bytes when the caller asked for
    undecoded replies (redis-py's ``NEVER_DECODE``), as a server client would."""
    if options.get("NEVER_DECODE"):
        return [key.encode("utf-8", "surrogateescape") for key in keys]
    return keys


def is_in_process(client: object) -> bool:
    """True for the in-process clients of this module."""
    return isinstance(client, (InProcessClient, AsyncInProcessClient))
