"""The exception hierarchy of agent-memory.

Every error the library raises derives from :class:`AgentMemoryError`. Errors of the
client packages (``valkey``, ``redis``) are translated at one boundary
(:func:`agent_memory.core.clients.map_client_errors`) and chained with ``raise ... from``,
so users never need to catch a client package's exception types. Sync and async
stores raise the same classes.

Families:

* :class:`InvalidInputError` (also a :class:`ValueError`): a bad argument; nothing
  was written.
* :class:`NotFoundError` (also a :class:`KeyError`): an id or selection that does not
  exist.
* :class:`ServerUnavailableError`: the server cannot be reached (connection refused
  or dropped, server loading, read-only replica).
* :class:`OperationTimeoutError`: the server did not answer within the timeout.
* :class:`IndexMismatchError`: the existing index or stored identity does not match
  this store's configuration (dimension, metric, schema version).
* :class:`CapabilityError`: the server lacks something the operation needs.
* :class:`EmbedderError`: the embedder (your callback) failed or returned something
  that is not a vector; the original exception is its ``__cause__``. It is both an
  :class:`InvalidInputError` (the text was not stored) and a :class:`CapabilityError`
  (the store cannot embed), so either family catches it.
* :class:`ServerResponseError`: the server answered with an error we do not expect.
  :class:`WrongTypeError`, one of them, is a key holding another type than the
  library's layout gives it (another writer replaced it).
* :class:`ReplyParseError`: a reply had a shape the parser cannot read.
* :class:`StoreClosedError`: the store was used after ``close()``.
* :class:`ReplicationTimeoutError`: a write was applied, but fewer replicas than asked
  for acknowledged it in time (``wait_replicas``).
"""

from __future__ import annotations


class AgentMemoryError(Exception):
    """Base class of every exception raised by agent-memory."""


class InvalidInputError(AgentMemoryError, ValueError):
    """An argument is invalid. Nothing was written or changed.

    Attributes:
        field: name of the offending argument, when known.
    """

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.field = field


class NotFoundError(AgentMemoryError, KeyError):
    """The memory, selection or other object does not exist (or has expired)."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else ""


class ServerUnavailableError(AgentMemoryError, ConnectionError):
    """The server could not be reached or cannot serve the request right now."""


class OperationTimeoutError(AgentMemoryError, TimeoutError):
    """The server did not answer within the configured timeout."""


class ReplicationTimeoutError(OperationTimeoutError):
    """A write was applied on the primary, but fewer replicas than ``wait_replicas``
    acknowledged it within ``wait_timeout_ms``: it may be lost if the primary fails now.
    Retrying the same write (same id) is safe.

    Attributes:
        acknowledged: how many replicas acknowledged it.
        wanted: how many were asked for.
    """

    def __init__(self, message: str, *, acknowledged: int, wanted: int) -> None:
        super().__init__(message)
        self.acknowledged = acknowledged
        self.wanted = wanted


class IndexMismatchError(AgentMemoryError):
    """The existing index or stored identity conflicts with this store's configuration."""


class CapabilityError(AgentMemoryError):
    """The server does not support what the operation needs."""


class EmbedderError(InvalidInputError, CapabilityError):
    """The embedder failed (its exception is the ``__cause__``) or returned something
    that is not a usable vector. Nothing was written."""


class ServerResponseError(AgentMemoryError):
    """The server answered with an unexpected error.

    Attributes:
        command: the command name that failed.
    """

    def __init__(self, message: str, *, command: str | None = None) -> None:
        super().__init__(message)
        self.command = command


class WrongTypeError(ServerResponseError):
    """A key holds another type than the library's layout gives it (the server's
    ``WRONGTYPE`` error: another writer replaced the key)."""


class ReplyParseError(AgentMemoryError):
    """A server reply had a shape the library cannot interpret."""


class StoreClosedError(AgentMemoryError):
    """The store (or cache tier) was used after ``close()``, or closed while the call
    ran (its connection dropped by the ``close()`` of another thread or task)."""


__all__ = [
    "AgentMemoryError",
    "CapabilityError",
    "EmbedderError",
    "IndexMismatchError",
    "InvalidInputError",
    "NotFoundError",
    "OperationTimeoutError",
    "ReplicationTimeoutError",
    "ReplyParseError",
    "ServerResponseError",
    "ServerUnavailableError",
    "StoreClosedError",
    "WrongTypeError",
]
