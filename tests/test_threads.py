"""One blocking store (and one blocking agent) shared by the threads of a web app's pool."""

from __future__ import annotations

import contextlib
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import valkey

from agent_memory import Scope, SyncAgentMemory, SyncMemoryStore
from agent_memory.backends.portable import PortableBackend, _NamespaceMirror
from agent_memory.backends.snapshot import Snapshot
from agent_memory.errors import ServerUnavailableError, StoreClosedError
from tests.conftest import ALL_KINDS, ServerInfo, _Servers
from tests.support import TableEmbedder, random_unit

_PROBE = "agent-memory dimension probe"


@pytest.fixture
def often_switching() -> Iterator[None]:
    """Make the interpreter switch threads often (exposes unsynchronised updates)."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


class _ProbedEmbedder:
    """Declares no width, so the lazy setup probes it (counted)."""

    def __init__(self) -> None:
        self.probes = 0
        self._lock = threading.Lock()

    def __call__(self, text: str) -> list[float]:
        if text == _PROBE:
            with self._lock:
                self.probes += 1
        return random_unit(text)


# valkey-search 1.0.2 is left out: eight threads writing through scripts on a busy
# 2-core host deadlock the module itself (a CI run timed out every thread; README
# "Limits", as in tests/reliability/test_concurrency.py: run 1.0.3+ or 1.2).
THREAD_KINDS = [kind for kind in ALL_KINDS if kind != "valkey-search-1.0"]


@pytest.mark.parametrize("kind", THREAD_KINDS)
def test_threads_sharing_a_fresh_store_set_it_up_once_and_count_exactly(
    servers: _Servers, kind: str, often_switching: None
) -> None:
    embed = _ProbedEmbedder()
    store = SyncMemoryStore.from_url(
        servers.get(kind).url, name=f"thr{uuid.uuid4().hex[:8]}", embed=embed, default_threshold=1.5
    )
    threads, rounds = 8, 10
    start = threading.Barrier(threads)
    failures: list[BaseException] = []

    def work(i: int) -> None:
        try:
            start.wait()
            for r in range(rounds):
                store.remember(f"fact {i} {r}", scope=Scope(namespace=f"ns{i % 2}"))
                store.recall(f"fact {i}", scope=Scope(namespace=f"ns{i % 2}"))
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    try:
        workers = [threading.Thread(target=work, args=(i,)) for i in range(threads)]
        for t in workers:
            t.start()
        for t in workers:
            t.join()
        assert failures == []
        assert embed.probes == 1  # one thread set the store up; the others waited
        stats = store.stats()
        assert stats.items == threads * rounds
        assert stats.counters["recalls"] == threads * rounds
        local = store._ctx.counters
        assert local["recalls"] == threads * rounds
        assert local["recall_hits"] + local.get("recall_empty", 0) == threads * rounds
    finally:
        store.close()


class _InterleavedReads(dict[str, int]):
    """Counters whose first two readers both read before either writes (when nothing
    keeps the second out while the first updates)."""

    def __init__(self) -> None:
        super().__init__()
        self.both_read = threading.Barrier(2, timeout=1.0)

    def get(self, key: str, default: Any = None) -> Any:
        value = super().get(key, default)
        # Broken: the other thread waited its turn, it reads after this one's write.
        with contextlib.suppress(threading.BrokenBarrierError):
            self.both_read.wait()
        return value


def test_events_counted_by_two_threads_at_once_are_both_counted(plain_server: ServerInfo) -> None:
    store = SyncMemoryStore.from_url(
        plain_server.url, name=f"thr{uuid.uuid4().hex[:8]}", embed=TableEmbedder()
    )
    store._ctx.counters = _InterleavedReads()
    try:
        reporters = [
            threading.Thread(target=store.report_corrupt_record, args=(f"m{i}", "damaged"))
            for i in range(2)
        ]
        for t in reporters:
            t.start()
        for t in reporters:
            t.join()
        assert store._ctx.counters["corrupt_records"] == 2
    finally:
        store.close()


class _HeldReply(valkey.Connection):
    """A connection whose reply, in the thread ``held`` names, is read only once the
    test says so (the command has reached the server by then)."""

    held: threading.Thread | None = None
    reading = threading.Event()
    go_on = threading.Event()

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        if threading.current_thread() is _HeldReply.held:
            _HeldReply.held = None
            _HeldReply.reading.set()
            _HeldReply.go_on.wait(timeout=30)
        return super().read_response(*args, **kwargs)


@pytest.fixture
def held_reply() -> Iterator[type[_HeldReply]]:
    _HeldReply.held = None
    _HeldReply.reading = threading.Event()
    _HeldReply.go_on = threading.Event()
    yield _HeldReply
    _HeldReply.held = None
    _HeldReply.go_on.set()


def _closed_mid_call(held: type[_HeldReply], call: Any, close: Any) -> BaseException | None:
    """``call()`` in a thread, whose reply is still awaited when ``close()`` runs."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - returned below
            raised.append(exc)

    worker = threading.Thread(target=run)
    held.held = worker
    worker.start()
    assert held.reading.wait(timeout=30)
    close()
    held.go_on.set()
    worker.join(timeout=30)
    assert not worker.is_alive()
    return raised[0] if raised else None


def _valkey_url(server: ServerInfo) -> str:
    return server.url.replace("redis://", "valkey://", 1)


def test_a_call_under_way_when_another_thread_closes_the_store_raises_store_closed(
    plain_server: ServerInfo, held_reply: type[_HeldReply]
) -> None:
    store = SyncMemoryStore.from_url(
        _valkey_url(plain_server),
        name=f"thr{uuid.uuid4().hex[:8]}",
        embed=TableEmbedder(),
        client_connection_class=held_reply,
    )
    store.ensure_index()
    raised = _closed_mid_call(held_reply, lambda: store.recall("anything"), store.close)
    assert isinstance(raised, StoreClosedError), repr(raised)
    assert isinstance(raised.__cause__, ServerUnavailableError)
    with pytest.raises(StoreClosedError):
        store.recall("anything")


def test_a_tier_call_under_way_when_another_thread_closes_the_agent_raises_store_closed(
    plain_server: ServerInfo, held_reply: type[_HeldReply]
) -> None:
    agent = SyncAgentMemory.from_url(
        _valkey_url(plain_server),
        name=f"thr{uuid.uuid4().hex[:8]}",
        embed=TableEmbedder(),
        discovery=False,
        client_connection_class=held_reply,
    )
    session = agent.session
    assert session is not None
    session.set("t1", "k", "v")
    raised = _closed_mid_call(held_reply, lambda: session.get("t1", "k"), agent.close)
    assert isinstance(raised, StoreClosedError), repr(raised)
    assert isinstance(raised.__cause__, ServerUnavailableError)


class _WatchedLock:
    """A lock that tells when the thread ``watched`` names first asks for it."""

    def __init__(self, asked: threading.Event) -> None:
        self.inner = threading.Lock()
        self.asked = asked
        self.watched: threading.Thread | None = None

    def __enter__(self) -> bool:
        if threading.current_thread() is self.watched:
            self.asked.set()
        return self.inner.acquire()

    def __exit__(self, *exc: object) -> None:
        self.inner.release()


class _PausedPublish(_NamespaceMirror):
    """A namespace mirror whose refresh by the thread ``paused`` names stops as it
    publishes its snapshot, until the test says go; tells when another thread dropped
    it for a new epoch (or asked for its lock to)."""

    def __init__(self) -> None:
        super().__init__()
        self.paused: threading.Thread | None = None
        self.publishing = threading.Event()
        self.go_on = threading.Event()
        self.reset_or_asked = threading.Event()
        self.lock = _WatchedLock(self.reset_or_asked)  # type: ignore[assignment]

    @property  # type: ignore[override]
    def snapshot(self) -> Snapshot | None:
        held: Snapshot | None = _NamespaceMirror.snapshot.__get__(self)  # type: ignore[attr-defined]
        return held

    @snapshot.setter
    def snapshot(self, value: Snapshot | None) -> None:
        if value is not None and threading.current_thread() is self.paused:
            self.paused = None
            self.publishing.set()
            self.go_on.wait(timeout=30)
        _NamespaceMirror.snapshot.__set__(self, value)  # type: ignore[attr-defined]

    @property  # type: ignore[override]
    def epoch(self) -> str | None:
        held: str | None = _NamespaceMirror.epoch.__get__(self)  # type: ignore[attr-defined]
        return held

    @epoch.setter
    def epoch(self, value: str | None) -> None:
        _NamespaceMirror.epoch.__set__(self, value)  # type: ignore[attr-defined]
        if value is not None and threading.current_thread() is self.lock.watched:
            self.reset_or_asked.set()


def test_a_refresh_racing_an_update_never_leaves_stale_vectors_in_the_mirror(
    plain_server: ServerInfo,
) -> None:
    # A recall's refresh checked the epoch, then published; a recall of the new epoch
    # (after an update of the text) dropping the mirror in between left the old snapshot
    # under the new epoch: recalls served the old vector until membership changed.
    embed = TableEmbedder()
    embed.set("where is the cat", [1.0] + [0.0] * 15)
    embed.set("the cat sleeps on the sofa", [0.99, 0.1] + [0.0] * 14)
    embed.set("the cat sleeps in the kitchen", [0.97, 0.0, 0.0, 0.2] + [0.0] * 12)
    store = SyncMemoryStore.from_url(
        plain_server.url, name=f"thr{uuid.uuid4().hex[:8]}", embed=embed, default_threshold=0.5
    )
    scope = Scope(namespace="ns")
    try:
        memory = store.remember("the cat sleeps on the sofa", scope=scope)
        backend = store._ctx.backend
        assert isinstance(backend, PortableBackend)
        mirror = _PausedPublish()
        backend._mirrors["ns"] = mirror

        def recall() -> None:
            store.recall("where is the cat", scope=scope)

        old = threading.Thread(target=recall)
        mirror.paused = old
        old.start()
        assert mirror.publishing.wait(timeout=30)  # it read the sofa's vector
        store.update(memory, content="the cat sleeps in the kitchen")
        new = threading.Thread(target=recall)
        mirror.lock.watched = new
        new.start()
        assert mirror.reset_or_asked.wait(timeout=30)
        mirror.go_on.set()
        for t in (old, new):
            t.join(timeout=30)
            assert not t.is_alive()
        (hit,) = store.recall("where is the cat", scope=scope)
        assert hit.item.content == "the cat sleeps in the kitchen"
        kitchen = 1.0 - 0.97 / (0.97**2 + 0.2**2) ** 0.5
        assert hit.distance == pytest.approx(kitchen, abs=1e-5)
    finally:
        store.close()


class _PublishedWhileRead(_NamespaceMirror):
    """A mirror whose snapshot, once read by the checking thread, is replaced with a
    newer one (and its version) by another thread, as a refresh publishes it."""

    def __init__(self, newer: Snapshot) -> None:
        super().__init__()
        self.newer = newer
        self.armed = True

    @property  # type: ignore[override]
    def snapshot(self) -> Snapshot | None:
        held: Snapshot | None = _NamespaceMirror.snapshot.__get__(self)  # type: ignore[attr-defined]
        if self.armed:
            self.armed = False

            def publish() -> None:
                with self.lock:
                    self.snapshot, self.version = self.newer, "v2"

            publisher = threading.Thread(target=publish)
            publisher.start()
            publisher.join(timeout=0.5)  # done at once unless the reader holds the lock
        return held

    @snapshot.setter
    def snapshot(self, value: Snapshot | None) -> None:
        _NamespaceMirror.snapshot.__set__(self, value)  # type: ignore[attr-defined]


def test_a_snapshot_published_while_a_search_checks_its_tokens_is_not_taken_for_current() -> None:
    """A recall checks that the tokens read with its candidates are those of the
    snapshot it searched; a refresh publishing a newer snapshot and version between the
    check's reads used to pass the old snapshot for the new version (one recall served
    stale vectors)."""
    old, newer = Snapshot.empty(4), Snapshot.empty(4)
    mirror = _PublishedWhileRead(newer)
    _NamespaceMirror.snapshot.__set__(mirror, old)  # type: ignore[attr-defined]
    mirror.epoch, mirror.version = "e1", "v1"
    backend = PortableBackend()
    backend._mirrors["ns"] = mirror
    assert backend._still_current(["ns"], {"ns": old}, [("e1", "v2")]) is False
