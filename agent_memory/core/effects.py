"""The effects an operation may ask its runner to perform.

An operation is a generator: it yields an effect, receives the result, and finally
returns its value. Operations never touch a client, a socket or an event loop, so
one body serves blocking and asyncio code and is tested by feeding canned replies.

* :class:`Command` -> the parsed reply of one server command.
* :class:`Batch` -> a list with one entry per command: the reply, or an
  :class:`~agent_memory.errors.AgentMemoryError` *instance* when that command failed
  (errors inside a batch are returned, not raised, so the operation decides).
* :class:`ScanKeys` -> every key matching a pattern, across all cluster primaries.
* :class:`Call` -> the return value of a user callback (embedder, summariser, ...),
  awaited by the async runner when it is awaitable.
* :class:`Sleep` -> after the pause (``asyncio.sleep`` under the async runner), whether
  other operations of the library share the event loop (``None`` from the blocking
  runner); ``Sleep(0)`` (:func:`pause`) lets the other tasks of an event loop run when
  that is worth a loop iteration, and costs the blocking runner nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from agent_memory.errors import InvalidInputError

Arg = str | bytes | int | float

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Command:
    """One server command.

    Attributes:
        args: the command name and its arguments.
        binary: the reply carries binary data (vector blobs) and must not be decoded,
            whatever the client's ``decode_responses`` setting.
        node: on a cluster client, send this keyless command to the ``node``-th primary
            (ordered by address) rather than to any; ignored by other clients.
        after_scripts: in a batch, this command must run after the batch's scripts:
            when a script the server did not know is sent again (``EVALSHA`` answered
            ``NOSCRIPT``), this command is sent again after it.
    """

    args: tuple[Arg, ...]
    binary: bool = False
    node: int | None = None
    after_scripts: bool = False

    @property
    def name(self) -> str:
        first = self.args[0]
        return first.decode() if isinstance(first, bytes) else str(first)


@dataclass(frozen=True, slots=True)
class Batch:
    """Several commands sent in one round trip.

    Attributes:
        commands: the commands, in order.
        atomic: wrap them in MULTI/EXEC (all keys must live in one hash slot on a
            cluster).
    """

    commands: tuple[Command, ...]
    atomic: bool = False


@dataclass(frozen=True, slots=True)
class Call:
    """Call a user-supplied function (sync or async) with positional arguments.

    With ``listed``, a one-shot iterator it returns (a generator, a ``map``) is turned
    into a list where the function ran (:func:`listed`): its deferred work is the
    function's, so it runs in the function's worker thread, and what it raises is the
    function's failure.
    """

    fn: Callable[..., Any]
    args: tuple[Any, ...] = field(default=())
    what: str = "callback"
    listed: bool = False


def listed(value: T) -> T | list[Any]:
    """``value`` as a list when it is a one-shot iterator (a generator, say), else itself."""
    return list(value) if isinstance(value, Iterator) else value


@dataclass(frozen=True, slots=True)
class ScanKeys:
    """All keys matching a glob pattern, on every primary of a cluster.

    Resolves to a ``list`` of keys (``str`` or ``bytes`` as the client decodes; always
    ``bytes`` with ``binary``, so that a key another writer made that is not UTF-8 is
    one key to skip, not a failed walk). Costs one SCAN cursor walk per primary; use
    only for maintenance, never on a hot path.
    """

    match: str
    count: int = 1000
    binary: bool = False


@dataclass(frozen=True, slots=True)
class Sleep:
    """Pause the operation (polling the server for a background job, say)."""

    seconds: float


Effect = Command | Batch | Call | ScanKeys | Sleep
Operation = Generator[Effect, Any, T]


def command(*args: Arg, binary: bool = False, node: int | None = None) -> Command:
    """Build a :class:`Command` from positional arguments."""
    return Command(tuple(args), binary=binary, node=node)


def batch(commands: Sequence[Command], *, atomic: bool = False) -> Batch:
    """Build a :class:`Batch`."""
    return Batch(tuple(commands), atomic=atomic)


def execute(*args: Arg, binary: bool = False, node: int | None = None) -> Operation[Any]:
    """Sub-operation: run one command and return its reply (``yield from execute(...)``)."""
    reply = yield Command(tuple(args), binary=binary, node=node)
    return reply


def execute_batch(commands: Sequence[Command], *, atomic: bool = False) -> Operation[list[Any]]:
    """Sub-operation: run commands in one round trip; returns replies or error instances."""
    if not commands:
        return []
    replies = yield Batch(tuple(commands), atomic=atomic)
    return list(replies)


def scan_keys(match: str, *, count: int = 1000, binary: bool = False) -> Operation[list[Any]]:
    """Sub-operation: every key matching ``match`` (all primaries of a cluster); as
    ``bytes`` whatever the client decodes with ``binary``."""
    keys = yield ScanKeys(match, count, binary)
    return list(keys)


def sleep(seconds: float) -> Operation[None]:
    """Sub-operation: pause for ``seconds`` without blocking an event loop."""
    yield Sleep(seconds)


_PAUSE = Sleep(0.0)


def pause() -> Operation[bool]:
    """Sub-operation: let the other tasks of an event loop run before going on.

    Long pure-Python stretches (parsing and ranking a recall's hundred candidates) are
    cut with pauses so that concurrent recalls take turns instead of queueing whole
    recalls behind each other. The async runner gives the loop away at a pause only
    while another operation of the library is in flight on the same loop, or once this
    one has held the loop for ``runner.LONE_TURN_SECONDS`` (a pause costs a loop
    iteration, ~15 us, wasted when nobody waits); the blocking runner skips it.

    Returns whether the loop is shared: other operations of the library are in flight
    on it, so the caller's next stretches should be short ones too.
    """
    shared = yield _PAUSE
    return shared is True


TURN_SLICE = 25  # candidates handled per event-loop turn (about 0.1 ms of Python)


def in_turns(items: Sequence[T], size: int = TURN_SLICE) -> Generator[Sequence[T], None, None]:
    """``items`` in consecutive slices of ``size``: an operation handles one slice per
    event-loop turn (``yield from pause()`` between them), so that eight concurrent
    recalls, whose replies arrive together, delay the loop by eight short turns rather
    than eight whole stages."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


@dataclass(slots=True)
class InFlight:
    """Marks work one operation does for all (a mirror refresh, the lazy index setup):
    concurrent operations :meth:`wait` for it instead of doing it too. The mark has a
    deadline, so work abandoned without clearing it (or stuck) blocks no one for long.

    The threads of a blocking store share it: :meth:`claim` checks and sets the mark
    under a lock, so of several threads that found nothing under way one does the work
    and the others wait (checked, then set, two threads could both start it)."""

    until: float = 0.0  # monotonic deadline of the work under way (0: none)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def wait(self, needed: Callable[[], bool], *, poll: float = 0.002) -> Operation[None]:
        """Sub-operation: poll while ``needed()`` and the work is under way."""
        while needed() and time.monotonic() < self.until:
            yield from sleep(poll)

    def claim(self, needed: Callable[[], bool], *, deadline: float) -> bool:
        """Mark the work as under way for at most ``deadline`` seconds, unless it already
        is or is no longer ``needed()`` (done by another while the caller waited for the
        lock): ``True`` when the caller now does it (then run it with :meth:`claimed`,
        which must publish its result before it clears the mark)."""
        with self._lock:
            now = time.monotonic()
            if now < self.until or not needed():
                return False
            self.until = now + deadline
            return True

    def claimed(self, op: Operation[T]) -> Operation[T]:
        """Sub-operation: ``op``, the work :meth:`claim` marked; the mark is cleared when
        it ends, failed or not, so the next operation that needs it does it."""
        try:
            result = yield from op
        finally:
            self.until = 0.0
        return result

    def run(self, op: Operation[T], *, deadline: float) -> Operation[T]:
        """Sub-operation: ``op``, marked as under way for at most ``deadline`` seconds
        whether or not other work holds the mark (the caller knows that work is stale)."""
        with self._lock:
            self.until = time.monotonic() + deadline
        result = yield from self.claimed(op)
        return result


def call(
    fn: Callable[..., Any], *args: Any, what: str = "callback", listed: bool = False
) -> Operation[Any]:
    """Sub-operation: call a user function, awaiting it under the async runner (with
    ``listed``, an iterator it returns comes back as a list: see :class:`Call`).

    Raises:
        InvalidInputError: ``fn`` is not callable.
    """
    if not callable(fn):
        raise InvalidInputError(f"the {what} must be callable, got {type(fn).__name__}", field=what)
    result = yield Call(fn, tuple(args), what, listed)
    return result
