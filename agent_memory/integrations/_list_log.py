"""A conversation log on a Valkey list, for any adapter's item codec (generators, no I/O).

A log is one list, ``{name}:{segment}:{log_id}``, one encoded entry per element, oldest
first. Every operation is one single-key command, so each is atomic on the server and a
log lives in one cluster slot:

* :func:`read_latest`: ``LRANGE key -limit -1`` (``0 -1`` for all). When corrupt
  elements sit among the newest ones the window doubles until ``limit`` valid entries
  are found or the list is exhausted (extra round trips only then).
* :func:`append`: one ``RPUSH`` of every entry (concurrent writers interleave whole
  batches, never lose one).
* :func:`pop_latest`: ``RPOP`` (one round trip when the newest element is valid). When it
  was corrupt, the tail is read in doubling ``LRANGE`` windows until a valid element
  shows, and :data:`POP_IF_TAIL` removes that element and the corrupt ones above it in
  one script, only if the tail is still what was read (a concurrent append or pop makes
  it start over with an ``RPOP``): a run of ``n`` corrupt elements costs O(log n) round
  trips, and no valid element is ever dropped or reordered.
* :func:`clear`: ``UNLINK``.

With a TTL, every command but ``UNLINK`` and the guarded pop runs in
:data:`LIST_WITH_LIFETIME`, a script that restarts the key's lifetime once the command
succeeded (a sliding lifetime, as on the session tier): a key of another type (another
client's) fails the command and keeps its own lifetime; a ``PEXPIRE`` pipelined beside
the command gave it one, and the server deleted it later. Each call also counts itself as
``session:reads`` or ``session:writes`` in ``{name}:__stats`` in that round trip; a call
the server refuses (a key of another type) takes its count back on the next one.

The adapter gives the codec: ``decode`` turns one stored element into an entry, or
``None`` when the element is corrupt (not written by this codec).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from agent_memory.cache._tier import TierCore
from agent_memory.cache.scripts import LIST_WITH_LIFETIME, POP_IF_TAIL
from agent_memory.cache.stats import batch_with_stats
from agent_memory.core.effects import Command, Operation
from agent_memory.core.replies import raise_first_error
from agent_memory.errors import AgentMemoryError, ReplyParseError

Entry = TypeVar("Entry")
#: Turns one stored element into an entry, or ``None`` when the element is corrupt.
Decode = Callable[[object], Entry | None]

READS = "session:reads"
WRITES = "session:writes"
# A window at least this long reads the whole list: no list a server holds in memory is
# that long, and LRANGE refuses indexes past 64 bits (a caller's limit may be any int).
WHOLE_LIST = 2**32


def log_key(name: str, segment: str, log_id: str) -> str:
    """The list holding log ``log_id`` of cache name ``name`` (pure)."""
    return f"{name}:{segment}:{log_id}"


def decode_entries(raw: object, decode: Decode[Entry]) -> tuple[list[Entry], int]:
    """The entries of an ``LRANGE`` reply, oldest first, and how many elements were
    corrupt (skipped) (pure).

    Raises:
        ReplyParseError: the reply is not a list.
    """
    if not isinstance(raw, (list, tuple)):
        raise ReplyParseError(f"LRANGE replied with a {type(raw).__name__}, not a list")
    entries = [entry for entry in map(decode, raw) if entry is not None]
    return entries, len(raw) - len(entries)


def access(
    tier: TierCore, key: str, command: Command, ttl_ms: int | None, counter: str | None
) -> Operation[Any]:
    """Run the single-key ``command`` (its first argument ``key``) and return its reply,
    in one round trip with the ``counter`` increment (none when ``None``); with
    ``ttl_ms``, inside :data:`LIST_WITH_LIFETIME`, so the key's lifetime restarts only
    when the command succeeded (any single-key command: the chat stores send sorted-set
    ones through it too).

    A command the server refuses takes its count back: the increment was already sent
    beside it, so a decrement waits in the tier's buffer for its next round trip. Sending the increment only after a success would take a second round
    trip, and buffering it would leave every successful call uncounted until the next.

    Raises:
        AgentMemoryError: the command failed (mapped by the client layer), e.g.
            WrongTypeError for a key of another type, whose lifetime is then unchanged.
    """
    if ttl_ms is not None:
        name, _, *rest = command.args
        command = Command(
            ("EVAL", LIST_WITH_LIFETIME, 1, key, ttl_ms, name, *rest), binary=command.binary
        )
    commands = [command]
    counts = {counter: 1} if counter else None
    got = yield from batch_with_stats(tier.layout, tier.buffer, commands, counts)
    if counter and isinstance(got[0], AgentMemoryError):
        tier.buffer.add({counter: -1})  # a refused call is no read or write
    raise_first_error(got)
    return got[0]


def read_latest(
    tier: TierCore, key: str, limit: int | None, ttl_ms: int | None, decode: Decode[Entry]
) -> Operation[tuple[list[Entry], int]]:
    """The latest ``limit`` valid entries (all when ``None``; none when ``<= 0``), oldest
    first, and the number of corrupt elements skipped in the last window read.

    Raises:
        ReplyParseError: the server's reply is not a list.
    """
    if limit is not None and limit <= 0:
        return [], 0
    window = None if limit is None or limit >= WHOLE_LIST else limit  # None: the whole list
    counter: str | None = READS
    while True:
        start = 0 if window is None else -window
        raw = yield from access(tier, key, Command(("LRANGE", key, start, -1)), ttl_ms, counter)
        counter = None  # one read per call, however many windows it takes
        entries, skipped = decode_entries(raw, decode)
        if window is None or limit is None or len(entries) >= limit or len(raw) < window:
            return (entries if limit is None else entries[-limit:]), skipped
        window = window * 2 if window * 2 < WHOLE_LIST else None


def append(
    tier: TierCore, key: str, encoded: Sequence[str | bytes], ttl_ms: int | None
) -> Operation[None]:
    """Append the encoded entries atomically (one ``RPUSH``)."""
    yield from access(tier, key, Command(("RPUSH", key, *encoded)), ttl_ms, WRITES)
    tier.note_stored(sum(len(e.encode("utf-8")) if isinstance(e, str) else len(e) for e in encoded))


#: The first tail window read after a corrupt pop (doubled until a valid element shows).
FIRST_WINDOW = 32


def newest_valid(elements: Sequence[object], decode: Decode[Entry]) -> tuple[int, Entry | None]:
    """The index of the newest element of ``elements`` (oldest first) that decodes, and
    its entry; ``(-1, None)`` when none does (pure)."""
    for index in range(len(elements) - 1, -1, -1):
        entry = decode(elements[index])
        if entry is not None:
            return index, entry
    return -1, None


def pop_latest(
    tier: TierCore, key: str, ttl_ms: int | None, decode: Decode[Entry]
) -> Operation[tuple[Entry | None, int]]:
    """Remove and return the newest valid entry (``None`` when there is none), and how
    many corrupt elements were removed on the way (for the caller to report).

    Raises:
        ReplyParseError: the server's reply to ``LRANGE`` is not a list.
    """
    counter: str | None = WRITES
    dropped = 0
    while True:
        # binary: a corrupt element need not be UTF-8, and the guard compares bytes
        pop = Command(("RPOP", key), binary=True)
        raw = yield from access(tier, key, pop, ttl_ms, counter)
        counter = None
        if raw is None:
            return None, dropped
        entry = decode(raw)
        if entry is not None:
            return entry, dropped
        dropped += 1
        # A corrupt top: find the newest valid element in ever larger tail windows, then
        # remove it and the corrupt ones above it at once, if the tail is unchanged.
        window = FIRST_WINDOW
        while True:
            read = Command(("LRANGE", key, -window, -1), binary=True)
            tail = yield from access(tier, key, read, ttl_ms, None)
            if not isinstance(tail, (list, tuple)):
                raise ReplyParseError(f"LRANGE replied with a {type(tail).__name__}, not a list")
            index, entry = newest_valid(tail, decode)
            if index >= 0 or len(tail) < window or window >= WHOLE_LIST:
                break
            window *= 2
        taken = list(tail[max(index, 0) :])
        if not taken:
            return None, dropped  # the list is empty now
        guarded = Command(("EVAL", POP_IF_TAIL, 1, key, *taken))
        # no lifetime of its own: this call's RPOP and reads restarted it just before
        removed = yield from access(tier, key, guarded, None, None)
        if removed == 1:
            return entry, dropped + len(taken) - (1 if index >= 0 else 0)
        # another client changed the tail meanwhile: pop again from the top (an RPOP
        # always makes progress, so contention cannot loop this forever)


def clear(tier: TierCore, key: str) -> Operation[None]:
    """Delete the log's list."""
    yield from access(tier, key, Command(("UNLINK", key)), None, WRITES)


__all__ = [
    "FIRST_WINDOW",
    "LIST_WITH_LIFETIME",
    "POP_IF_TAIL",
    "READS",
    "WRITES",
    "Decode",
    "access",
    "append",
    "clear",
    "decode_entries",
    "log_key",
    "newest_valid",
    "pop_latest",
    "read_latest",
]
