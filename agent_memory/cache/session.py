"""Session (thread) state store with a sliding TTL.

A thread is one hash, ``{name}:session:{thread_id}``, one field per state key, so
``get_all`` is one ``HGETALL`` and ``destroy_thread`` one ``UNLINK``: nothing ever
SCANs. Values are any JSON value and are stored JSON-encoded (a ``str`` value ``"x"`` is
stored as ``"\\"x\\""``); a field written by someone else that is not valid JSON is
returned as its text. Every read or write refreshes the thread's TTL (``PEXPIRE`` in
the same pipeline); ``ttl=None`` keeps threads forever.

Counters: ``session:reads`` (get, get_all) and ``session:writes`` (set, delete,
destroy_thread), sent in the operation's own pipeline. The active-sessions gauge
(``agent_cache_active_sessions``) counts the threads this process has touched whose TTL
has not run out since (destroyed threads excluded): a per-process view, no SCAN.

Every method raises :class:`~agent_memory.errors.ServerUnavailableError`,
:class:`~agent_memory.errors.OperationTimeoutError` or
:class:`~agent_memory.errors.ServerResponseError` when the server fails, and
:class:`~agent_memory.errors.InvalidInputError` for an empty or non-string thread id or
key (nothing is written then).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from agent_memory.cache._tier import TierCore
from agent_memory.cache.keys import check_text, plain, ttl_ms
from agent_memory.cache.stats import batch_with_stats
from agent_memory.core import replies
from agent_memory.core.effects import Command, Operation
from agent_memory.core.replies import raise_first_error

DEFAULT_SESSION_TTL = 86_400.0


def _decode(raw: Any) -> Any:
    text = replies.text(raw)
    try:
        return json.loads(text)
    except ValueError:
        return text


class SessionCore:
    """The operations of the session store (no I/O)."""

    def __init__(
        self, name: str, ttl: float | None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.tier = TierCore(name)
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

    def _access(self, key: str, command: Command, counter: str | None) -> Operation[Any]:
        self._seen(key)
        commands = [command]
        if self.ttl_ms is not None:
            commands.append(Command(("PEXPIRE", key, self.ttl_ms)))
        counts = {counter: 1} if counter else None
        got = yield from batch_with_stats(self.tier.layout, self.tier.buffer, commands, counts)
        raise_first_error(got)
        return got[0]

    def get(self, thread_id: str, key: str) -> Operation[Any]:
        hkey = self._key(thread_id)
        field = check_text(key, field="key")
        raw = yield from self._access(hkey, Command(("HGET", hkey, field)), "session:reads")
        return None if raw is None else _decode(raw)

    def set(self, thread_id: str, key: str, value: Any) -> Operation[None]:
        hkey = self._key(thread_id)
        field = check_text(key, field="key")
        encoded = json.dumps(plain(value, "value"), ensure_ascii=False, allow_nan=False)
        yield from self._access(hkey, Command(("HSET", hkey, field, encoded)), "session:writes")
        self.tier.note_stored(len(encoded.encode("utf-8")))

    def get_all(self, thread_id: str) -> Operation[dict[str, Any]]:
        hkey = self._key(thread_id)
        raw = yield from self._access(hkey, Command(("HGETALL", hkey)), "session:reads")
        return {field: _decode(value) for field, value in replies.pairs(raw).items()}

    def delete(self, thread_id: str, key: str) -> Operation[bool]:
        hkey = self._key(thread_id)
        field = check_text(key, field="key")
        raw = yield from self._access(hkey, Command(("HDEL", hkey, field)), "session:writes")
        return replies.integer(raw) > 0

    def destroy_thread(self, thread_id: str) -> Operation[int]:
        hkey = self._key(thread_id)
        commands: Sequence[Command] = [Command(("HLEN", hkey)), Command(("UNLINK", hkey))]
        got = yield from batch_with_stats(
            self.tier.layout, self.tier.buffer, commands, {"session:writes": 1}
        )
        raise_first_error(got)
        self._seen(hkey, alive=False)
        return replies.integer(got[0])

    def touch(self, thread_id: str) -> Operation[bool]:
        hkey = self._key(thread_id)
        command = (
            Command(("PEXPIRE", hkey, self.ttl_ms))
            if self.ttl_ms is not None
            else Command(("EXISTS", hkey))
        )
        got = yield from batch_with_stats(self.tier.layout, self.tier.buffer, [command])
        raise_first_error(got)
        alive = replies.integer(got[0]) > 0
        self._seen(hkey, alive=alive)
        return alive
