"""Any Unicode value works as a scope or tag and can never widen a filter."""

from __future__ import annotations

from agent_memory import Scope
from tests.store.conftest import StoreEnv
from tests.support import TableEmbedder, near, random_unit

HOSTILE = [
    "a|b", "{x}", "*", "-neg", "@f:{v}", "a:b", "a,b", "back\\slash", "with space",
    "tab\there", "quote\"s'", "emoji 🧠", "Ünïcödé", "(paren)", "$param", "a b | c",
]  # fmt: skip


async def test_hostile_values_round_trip_and_stay_isolated(env: StoreEnv) -> None:
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    store = env.make(embed)
    for i, value in enumerate(HOSTILE):
        text = f"memory {i}"
        embed.set(text, near(q, 0.05, str(i)))
        await store.remember(
            text, tags=[value], scope=Scope(namespace=value, agent_id=value, thread_id=value)
        )
    # the "a" and "b" tenants exist too, so an OR leak would show
    for plain in ("a", "b", "x"):
        embed.set(f"plain {plain}", near(q, 0.05, plain))
        await store.remember(
            f"plain {plain}", tags=[plain], scope=Scope(namespace=plain, agent_id=plain)
        )
    for i, value in enumerate(HOSTILE):
        scope = Scope(namespace=value, agent_id=value, thread_id=value)
        hits = await store.recall("query", scope=scope, tags=[value], k=50)
        assert [h.item.content for h in hits] == [f"memory {i}"], value
        item = hits[0].item
        assert item.scope == scope and item.tags == (value,)
        listed = await store.list(scope=Scope(namespace=value))
        assert [it.content for it in listed.items] == [f"memory {i}"]
    # The default namespace sees none of them.
    assert len(await store.recall("query", k=50)) == 0


async def test_case_matters_in_namespaces(env: StoreEnv) -> None:
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    embed.set("upper", near(q, 0.05, "u"))
    store = env.make(embed)
    await store.remember("upper", scope=Scope(namespace="Tenant"))
    assert len(await store.recall("query", scope=Scope(namespace="tenant"))) == 0
    assert len(await store.recall("query", scope=Scope(namespace="Tenant"))) == 1


async def test_forget_by_scope_never_reaches_another_tenant(env: StoreEnv) -> None:
    store = env.make()
    await store.remember("mine", scope=Scope(namespace="a|b", thread_id="t"))
    await store.remember("theirs a", scope=Scope(namespace="a", thread_id="t"))
    await store.remember("theirs b", scope=Scope(namespace="b", thread_id="t"))
    assert await store.forget_by_scope(Scope(namespace="a|b", thread_id="t")) == 1
    assert (await store.list(scope=Scope(namespace="a"))).total == 1
    assert (await store.list(scope=Scope(namespace="b"))).total == 1


async def test_session_memories_are_private_and_not_crowded_out(env: StoreEnv) -> None:
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    store = env.make(embed)
    shared = [{"content": f"shared {i}", "importance": 1.0} for i in range(100)]
    for i in range(100):
        embed.set(f"shared {i}", near(q, 0.01, f"s{i % 3}"))
    embed.set("session note", near(q, 0.2, "sess"))
    await store.remember_many(shared)
    await store.remember(
        "session note", scope=Scope(session_id="s1"), durability="session", importance=0.0
    )
    in_session = await store.recall("query", scope=Scope(session_id="s1"), k=5)
    assert "session note" in [h.item.content for h in in_session]
    assert len(in_session) == 5
    other_session = await store.recall("query", scope=Scope(session_id="s2"), k=5)
    assert "session note" not in [h.item.content for h in other_session]
    no_session = await store.recall("query", k=200)
    assert "session note" not in [h.item.content for h in no_session]
    item = next(h.item for h in in_session if h.item.content == "session note")
    assert item.durability == "session" and item.scope.session_id == "s1"


# Labels whose texts "key=value" (and so tokens) were one before keys were escaped ("="
# in a key against "=" in a value), or would be with only "=" escaped (a key ending in a
# backslash).
COLLIDING_LABELS = [
    ({"team=red": ["x"]}, {"team": ["red=x"]}),
    ({"k=": ["v"]}, {"k\\": ["=v"]}),
]


async def test_a_label_filter_is_never_widened_by_an_equals_sign(env: StoreEnv) -> None:
    """``{"team": ["red=x"]}`` selected the memory labelled ``{"team=red": ["x"]}`` (the
    same token ``team=red=x``): the key is now escaped before the join."""
    embed = TableEmbedder()
    q = random_unit("q")
    embed.set("query", q)
    store = env.make(embed)
    for n, pair in enumerate(COLLIDING_LABELS):
        for i, labels in enumerate(pair):
            text = f"memory {n}.{i}"
            embed.set(text, near(q, 0.05, text))
            await store.remember(text, labels=labels)
    embed.set("plain", near(q, 0.05, "plain"))
    await store.remember("plain", labels={"team": ["red"], "k": ["v"]})
    for n, pair in enumerate(COLLIDING_LABELS):
        for i, labels in enumerate(pair):
            hits = await store.recall("query", labels=labels, k=50, threshold=2.0)
            assert [h.item.content for h in hits] == [f"memory {n}.{i}"], labels
            assert dict(hits[0].item.labels) == {k: tuple(v) for k, v in labels.items()}
