"""Property test: whatever tenant A's namespace / agent / thread / tag values are (any
Unicode, every filter metacharacter, spaces, tabs, emoji), a recall, list, export
or forget_by_scope of a tenant B that differs in any one of them never sees or touches
A's memory, on every backend (FT, portable, in-process). ``export`` is checked the
same way."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from agent_memory import InvalidInputError, Scope, SyncMemoryStore
from agent_memory.backends.inprocess import InProcessClient, Keyspace
from tests.conftest import VALKEY_SEARCH_KINDS, _Servers
from tests.reliability.conftest import soak
from tests.support import TableEmbedder, near, random_unit

METACHARACTERS = "|{}*-@:,\\()[]$\"' \t;~<>%^&!?#=+.`/"
_ALPHABET = st.one_of(
    st.sampled_from(list(METACHARACTERS)),
    st.sampled_from(["a", "b", "A", "0", "🧠", "é", "\u200b", "ß", "ǅ"]),
    st.characters(codec="utf-8"),
)
VALUE = st.text(_ALPHABET, min_size=1, max_size=12).filter(lambda v: v.strip() != "")


def _valid(value: str) -> bool:
    try:
        Scope(namespace=value)
    except InvalidInputError:
        return False
    return True


VALUES = VALUE.filter(_valid)
OPTIONAL = st.one_of(st.none(), VALUES)

BACKENDS = ["valkey-redisearch", "valkey", "inprocess", *VALKEY_SEARCH_KINDS]


@pytest.fixture(params=BACKENDS)
def make_store(request: pytest.FixtureRequest, servers: _Servers) -> Iterator[Callable[[], Any]]:
    kind = request.param
    clients: list[Any] = []

    def make() -> Any:
        embed = TableEmbedder()
        q = random_unit("query")
        embed.set("query", q)
        embed.set("tenant A secret", near(q, 0.05, "a"))
        if kind == "inprocess":
            client: Any = InProcessClient(Keyspace())
        else:
            import valkey

            client = valkey.Valkey.from_url(servers.get(kind).url)
            clients.append(client)
        store = SyncMemoryStore(client, f"i{uuid.uuid4().hex[:10]}", embed)
        expected = {"valkey": "portable", "inprocess": "inprocess"}.get(kind, "ft")
        assert store.ensure_index().backend == expected
        return store

    yield make
    for client in clients:
        client.close()


PROPERTY = settings(
    max_examples=soak(30, 300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@PROPERTY
@given(
    a_ns=OPTIONAL, a_agent=VALUES, a_thread=VALUES, a_tags=st.lists(VALUES, min_size=1, max_size=3),
    b_ns=OPTIONAL, b_agent=VALUES, b_thread=VALUES, b_tag=VALUES,
)  # fmt: skip
@example(a_ns="a|b", a_agent="x", a_thread="t", a_tags=["a|b"], b_ns="a", b_agent="x|y",
         b_thread="t*", b_tag="a")  # fmt: skip
@example(a_ns="*", a_agent="*", a_thread="*", a_tags=["*"], b_ns="x", b_agent="y", b_thread="z",
         b_tag="-*")  # fmt: skip
@example(a_ns="{x}", a_agent="a b", a_thread="t\tt", a_tags=["{x}", "@f:{v}"], b_ns="x",
         b_agent="a", b_thread="t", b_tag="x")  # fmt: skip
@example(a_ns=None, a_agent="é", a_thread="🧠", a_tags=["back\\slash"], b_ns="_d",
         b_agent="e", b_thread="brain", b_tag="back")  # fmt: skip
def test_tenant_b_never_reaches_tenant_a(
    make_store: Callable[[], Any],
    a_ns: str | None, a_agent: str, a_thread: str, a_tags: list[str],
    b_ns: str | None, b_agent: str, b_thread: str, b_tag: str,
) -> None:  # fmt: skip
    assume(b_ns != a_ns and b_agent != a_agent and b_thread != a_thread and b_tag not in a_tags)
    store = make_store()
    a_scope = Scope(namespace=a_ns, agent_id=a_agent, thread_id=a_thread)
    secret = store.remember("tenant A secret", tags=a_tags, scope=a_scope)

    # Positive control: A itself finds the memory through every filter it set.
    own = store.recall("query", scope=a_scope, tags=a_tags, k=10, threshold=2.0)
    assert [h.item.id for h in own] == [secret]
    assert own[0].item.scope == a_scope and set(own[0].item.tags) == set(a_tags)

    probes = [
        Scope(namespace=b_ns),  # another namespace
        Scope(namespace=b_ns, agent_id=a_agent, thread_id=a_thread),
        Scope(namespace=a_ns, agent_id=b_agent),  # same namespace, another agent
        Scope(namespace=a_ns, thread_id=b_thread),  # same namespace, another thread
    ]
    for scope in probes:
        assert len(store.recall("query", scope=scope, k=50, threshold=2.0)) == 0, scope
        assert store.list(scope=scope, limit=100).total == 0, scope
        assert list(store.export(scope, include_vectors=False)) == [], scope
    exported = [r["id"] for r in store.export(a_scope, include_vectors=False)]
    assert exported == [secret]  # control: A's own export has it
    # Session-private memories: another session sees A's shared memory, never A's
    # session memory; listing another session lists nothing.
    a_session = Scope(namespace=a_ns, agent_id=a_agent, thread_id=a_thread, session_id=a_agent)
    private = store.remember("tenant A secret", scope=a_session, durability="session")
    other = Scope(namespace=a_ns, agent_id=a_agent, thread_id=a_thread, session_id=b_agent)
    seen = store.recall("query", scope=other, k=50, threshold=2.0)
    assert [h.item.id for h in seen] == [secret]
    assert store.list(scope=other).total == 0
    assert store.forget_by_scope(other) == 0
    mine = store.recall("query", scope=a_session, k=50, threshold=2.0)
    assert {h.item.id for h in mine} == {secret, private}
    # Same scope, a tag A does not carry.
    assert len(store.recall("query", scope=a_scope, tags=[b_tag], k=50, threshold=2.0)) == 0
    assert store.list(scope=a_scope, tags=[b_tag]).total == 0
    for scope in probes[:4]:
        assert store.forget_by_scope(scope) == 0, scope
    assert store.forget_by_scope(a_scope, tags=[b_tag]) == 0
    assert store.get(secret) is not None
    # ...and A's own forget_by_scope does reach it (the control for the zeros above).
    assert store.forget_by_scope(Scope(namespace=a_ns, agent_id=a_agent)) == 2
    store.close()
