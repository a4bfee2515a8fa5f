"""Session (thread) state store with a sliding TTL.

A thread is one hash, ``{name}:session:{thread_id}``, one field per state key, so
``get_all`` is one ``HGETALL`` and ``destroy_thread`` one script (``HLEN`` and
``UNLINK``, atomically): nothing ever SCANs. Values are any JSON value and are stored JSON-encoded (a ``str`` value ``"x"`` is
stored as ``"\\"x\\""``); a field written by someone else that is not valid JSON is
returned as its text, and one that is not even UTF-8 text is read as absent (``get``
returns ``None``, ``get_all`` leaves it out), logged and counted (``corrupt_entries``).
Every read or write refreshes the thread's TTL (a script in the same pipeline that
refreshes it only while the key holds a hash: a key another writer gave another type is
never changed by a read, a write, a touch or ``destroy_thread``); ``ttl=None`` keeps threads forever.

Counters: ``session:reads`` (get, get_all) and ``session:writes`` (set, delete,
destroy_thread), sent in the operation's own pipeline. The active-sessions gauge
(``agent_cache_active_sessions``) counts the threads this process has touched that
existed afterwards and whose TTL has not run out since (destroyed threads and reads of
threads that do not exist excluded): a per-process view, no SCAN.

Every method raises :class:`~agent_memory.errors.ServerUnavailableError`,
:class:`~agent_memory.errors.OperationTimeoutError` or
:class:`~agent_memory.errors.ServerResponseError` when the server fails, and
:class:`~agent_memory.errors.InvalidInputError` for an empty or non-string thread id or
key, or a value that is not JSON (an integer beyond a float's range included; text with
a lone surrogate is stored as a JSON escape and read back as it was) (nothing is written
then).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

from agent_memory.cache._tier import TierCore
from agent_memory.cache.keys import check_name_for_tier, check_text, encode_json, plain, ttl_ms
from agent_memory.cache.scripts import DESTROY_THREAD, REFRESH_THREAD
from agent_memory.cache.stats import batch_with_stats
from agent_memory.core import replies
from agent_memory.core.effects import Command, Operation
from agent_memory.core.replies import raise_first_error
from agent_memory.errors import WrongTypeError

DEFAULT_SESSION_TTL = 86_400.0


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


def _decode(raw: Any) -> tuple[Any, bool]:
    """A stored field's value and whether it is readable: JSON, else its text when it
    is text (a foreign writer's: ``NaN`` and infinities, which Python's decoder would
    take, included); ``(None, False)`` when it is not UTF-8."""
    text = replies.lenient_text(raw)
    if text is None:
        return None, False
    try:
        return json.loads(text, parse_constant=_not_json), True
    except RecursionError:  # nested deeper than any value this library writes
        return None, False
    except ValueError:
        return text, True


class SessionCore:
    """The operations of the session store (no I/O)."""

    def __init__(
        self, name: str, ttl: float | None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.tier = TierCore(name)
        # Thread ids are any text: a name holding ":session:" would share keys with
        # another name's threads.
        check_name_for_tier(self.tier.layout.name, "session")
        self.ttl_ms = ttl_ms(ttl)
        self._clock = clock
        self._live: dict[str, float] = {}  # session key -> when its TTL runs out
        self._lock = threading.Lock()
        self.tier.active_sessions = self.active

    def _key(self, thread_id: str) -> str:
        return self.tier.layout.session(check_text(thread_id, field="thread_id"))

    def _seen(self, key: str, alive: bool = True) -> None:
        with self._lock:
            if not alive:
                self._live.pop(key, None)
            else:
                ttl = self.ttl_ms / 1000 if self.ttl_ms is not None else float("inf")
                self._live[key] = self._clock() + ttl

    def active(self) -> int:
        """Threads this process touched whose TTL has not run out (see the module doc)."""
        now = self._clock()
        with self._lock:
            for key in [k for k, until in self._live.items() if until <= now]:
                del self._live[key]
            return len(self._live)

    def refresh(self, key: str) -> Command:
        """The command that refreshes the thread ``key``'s TTL (without a TTL, only asks
        whether it exists): 1 a thread, 0 no such key, -1 a key of another type, which
        it leaves untouched (:data:`~agent_memory.cache.scripts.REFRESH_THREAD`)."""
        ttl = "" if self.ttl_ms is None else str(self.ttl_ms)
        # after the batch's scripts even when the server did not know them yet
        return Command(("EVAL", REFRESH_THREAD, "1", key, ttl), after_scripts=True)

    def _access(
        self, key: str, command: Command, counter: str | None, *, read: bool = False
    ) -> Operation[Any]:
        """Run ``command`` on the thread ``key`` with its TTL refresh (:meth:`refresh`),
        whose reply says whether the thread exists afterwards.

        A ``read`` of a key another writer left holding another type answers ``None``
        (reported as unreadable), so a damaged thread reads as empty; a write to it
        raises :class:`~agent_memory.errors.WrongTypeError`. Either way that key keeps
        the TTL it had (``destroy_thread`` deletes it, clearing the thread for writes)."""
        probe = self.refresh(key)
        counts = {counter: 1} if counter else None
        got = yield from batch_with_stats(
            self.tier.layout, self.tier.buffer, [command, probe], counts
        )
        first = got[0]
        if read and isinstance(first, WrongTypeError):
            self.tier.unreadable(key, "the thread's key holds another type")
            first = None
        raise_first_error([first, *got[1:]])
        self._seen(key, alive=replies.integer(got[1]) > 0)
        return first

    def _unreadable(self, key: str, field: str) -> None:
        self.tier.unreadable(f"field {field!r} of {key}", "not UTF-8 text")

    def get(self, thread_id: str, key: str) -> Operation[Any]:
        hkey = self._key(thread_id)
        field = check_text(key, field="key")
        command = Command(("HGET", hkey, field), binary=True)
        raw = yield from self._access(hkey, command, "session:reads", read=True)
        if raw is None:
            return None
        value, readable = _decode(raw)
        if not readable:
            self._unreadable(hkey, field)
        return value

    def set(self, thread_id: str, key: str, value: Any) -> Operation[None]:
        hkey = self._key(thread_id)
        field = check_text(key, field="key")
        encoded = encode_json(plain(value, "value"), compact=False)
        yield from self._access(hkey, Command(("HSET", hkey, field, encoded)), "session:writes")
        self.tier.note_stored(len(encoded))

    def get_all(self, thread_id: str) -> Operation[dict[str, Any]]:
        hkey = self._key(thread_id)
        command = Command(("HGETALL", hkey), binary=True)
        raw = yield from self._access(hkey, command, "session:reads", read=True)
        found: dict[str, Any] = {}
        for raw_field, raw_value in replies.raw_pairs(raw):
            field = replies.lenient_text(raw_field)
            value, readable = _decode(raw_value)
            if field is None or not readable:
                self._unreadable(hkey, field if field is not None else repr(raw_field))
                continue
            found[field] = value
        return found

    def delete(self, thread_id: str, key: str) -> Operation[bool]:
        hkey = self._key(thread_id)
        field = check_text(key, field="key")
        raw = yield from self._access(hkey, Command(("HDEL", hkey, field)), "session:writes")
        return replies.integer(raw) > 0

    def destroy_thread(self, thread_id: str) -> Operation[int]:
        hkey = self._key(thread_id)
        # one script: the count is the fields deleted, whatever writes run meanwhile
        command = Command(("EVAL", DESTROY_THREAD, "1", hkey))
        got = yield from batch_with_stats(
            self.tier.layout, self.tier.buffer, [command], {"session:writes": 1}
        )
        raise_first_error(got)
        fields = replies.integer(got[0])
        if fields < 0:  # not a thread: deleted all the same, so new writes can start
            self.tier.unreadable(hkey, "the thread's key held another type (deleted)")
        self._seen(hkey, alive=False)
        return max(fields, 0)

    def touch(self, thread_id: str) -> Operation[bool]:
        hkey = self._key(thread_id)
        got = yield from batch_with_stats(self.tier.layout, self.tier.buffer, [self.refresh(hkey)])
        raise_first_error(got)
        found = replies.integer(got[0])
        if found < 0:  # another writer's key: not a thread, and left as it is
            self.tier.unreadable(hkey, "the thread's key holds another type")
        self._seen(hkey, alive=found > 0)
        return found > 0
