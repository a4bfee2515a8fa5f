"""Hybrid lexical + semantic recall on every server/client (and the in-process client)."""

from __future__ import annotations

import asyncio
import random
import string
import uuid
from typing import Any

import pytest

from agent_memory import (
    InvalidInputError,
    MemoryInput,
    MemoryStore,
    NotFoundError,
    RecallWeights,
    Scope,
)
from agent_memory.backends.inprocess import AsyncInProcessClient, Keyspace
from agent_memory.schema import lexical
from agent_memory.schema.encoding import namespace_token
from tests.store.conftest import StoreEnv
from tests.support import TableEmbedder, near, random_unit
from tests.support import raw_command as _raw


class Clock:
    def __init__(self, start: float = 1_700_000_000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now


def _name(store: Any) -> str:
    return str(getattr(store, "wrapped", store).name)


async def _stats(store: Any, namespace: str | None = None) -> dict[str, int]:
    key = f"{_name(store)}:__mem_df:{namespace_token(namespace)}"
    raw = await _raw(store, "HGETALL", key)
    if isinstance(raw, list):  # RESP2 without a parser callback
        raw = dict(zip(raw[::2], raw[1::2], strict=True))
    out = {}
    for k, v in (raw or {}).items():
        name = k.decode() if isinstance(k, bytes) else str(k)
        out[name] = int(v)
    return out


def _expected(contents: list[str]) -> dict[str, int]:
    return lexical.stats_delta(contents, 1)


CORPUS = [
    "Caroline went to the LGBTQ support group on Tuesday",
    "Melanie painted a sunrise over the lake last year",
    "Caroline is researching adoption agencies",
    "Melanie ran a charity race for mental health",
    "The kids loved the dinosaur exhibit at the museum",
    "Caroline gave a speech at a school about her transition",
    "Melanie took the kids camping in the mountains",
    "Caroline wants to move back to her home country",
    "Melanie is reading a book about pottery",
    "The weather was nice yesterday",
]


async def test_lexical_match_is_found_when_the_embedding_misses_it(env: StoreEnv) -> None:
    embed = TableEmbedder()
    q = random_unit("q")
    query = "what is the purple elephant launch code?"
    embed.set(query, q)
    embed.set("The launch code is PURPLE-ELEPHANT", near(q, 1.0, "code"))
    # More memories near the query than the semantic pool holds (max(4k, 50)).
    for i in range(60):
        embed.set(f"close memory number {i}", near(q, 0.1 + 0.005 * i, f"c{i}"))
    store = env.make(embed, default_threshold=0.33)
    await store.remember("The launch code is PURPLE-ELEPHANT")
    await store.remember_many([MemoryInput(f"close memory number {i}") for i in range(60)])
    hits = await store.recall(query, k=3, reinforce=False)
    found = {h.item.content: h for h in hits}
    hit = found["The launch code is PURPLE-ELEPHANT"]  # beyond the gate, yet recalled
    assert hit.matched == frozenset({"lexical"}) and hit.lexical_score > 0
    assert hit.distance >= max(h.distance for h in hits)  # a lower bound
    assert sum(h.matched == frozenset({"semantic"}) for h in hits) == 2
    # Hybrid off: the embedding alone misses it (and the gate keeps it out).
    plain = await store.recall(
        query, k=3, reinforce=False, weights=RecallWeights(0.6, 0.25, 0.15, lexical=0)
    )
    assert "The launch code is PURPLE-ELEPHANT" not in [h.item.content for h in plain]
    # A vector recall has no text: semantic only.
    by_vector = await store.recall_by_vector(q, k=3, reinforce=False)
    assert all(h.matched == frozenset({"semantic"}) for h in by_vector)


async def test_one_shared_common_word_does_not_open_the_gate(env: StoreEnv) -> None:
    """A lexical match passes the gate only when it carries at least half of the
    query's idf mass: "user" alone does not make "The user's name is Ada" an answer to a
    question about invoices, while a memory holding the rare words does pass."""
    embed = TableEmbedder()
    q = random_unit("q")
    question = "What is the user's shipping address for invoices?"
    embed.set(question, q)
    far = {
        "The user's name is Ada": near(q, 0.9, "a"),
        "The user likes green tea": near(q, 0.95, "b"),
        "The user prefers dark mode": near(q, 0.92, "c"),
        "Invoices go to the shipping address on file": near(q, 0.9, "d"),
    }
    for text, vector in far.items():
        embed.set(text, vector)
    store = env.make(embed, default_threshold=0.65)
    for text in far:
        await store.remember(text)
    hits = await store.recall(question, k=10, reinforce=False)
    assert [h.item.content for h in hits] == ["Invoices go to the shipping address on file"]
    assert "lexical" in hits[0].matched and hits[0].distance > 0.65


async def test_hybrid_respects_filters_and_tenants(env: StoreEnv) -> None:
    embed = TableEmbedder()
    store = env.make(embed)
    await store.remember("purple elephant in namespace a", scope=Scope(namespace="a"))
    await store.remember("purple elephant for agent x", scope=Scope(agent_id="x"))
    await store.remember("purple elephant tagged", tags=["t"])
    hits = await store.recall("purple elephant", scope=Scope(namespace="a"), reinforce=False)
    assert [h.item.content for h in hits] == ["purple elephant in namespace a"]
    hits = await store.recall("purple elephant", scope=Scope(agent_id="x"), reinforce=False)
    assert [h.item.content for h in hits] == ["purple elephant for agent x"]
    hits = await store.recall("purple elephant", tags=["t"], reinforce=False)
    assert [h.item.content for h in hits] == ["purple elephant tagged"]


async def test_session_recall_is_hybrid_in_both_pools(env: StoreEnv) -> None:
    embed = TableEmbedder()
    store = env.make(embed)
    scope = Scope(session_id="s1")
    await store.remember("the orange giraffe is shared")
    await store.remember("the orange giraffe is private", scope=scope, durability="session")
    await store.remember("the orange giraffe of another session",
                         scope=Scope(session_id="s2"), durability="session")  # fmt: skip
    hits = await store.recall("orange giraffe", scope=scope, k=4, reinforce=False)
    assert sorted(h.item.content for h in hits) == [
        "the orange giraffe is private",
        "the orange giraffe is shared",
    ]
    assert all("lexical" in h.matched for h in hits)


async def _reference(clock: Clock, embed: TableEmbedder, name: str) -> list[tuple[str, float]]:
    client = AsyncInProcessClient(Keyspace(clock))
    store = MemoryStore(client, name, embed, clock=clock, default_threshold=2.0)
    await _fill(store, clock)
    hits = await store.recall("When did Caroline go to the support group?", k=10, reinforce=False)
    await store.close()
    return [(h.item.content, h.score) for h in hits]


async def _fill(store: Any, clock: Clock) -> None:
    for i, text in enumerate(CORPUS):
        await store.remember(text, importance=0.3 + 0.05 * i)
        clock.now += 3600


async def test_all_backends_rank_identically(env: StoreEnv) -> None:
    start = 1_700_000_000.0
    embed = TableEmbedder()
    embed.set("When did Caroline go to the support group?", random_unit("support"))
    clock = Clock(start)
    store = env.make(embed, clock=clock, default_threshold=2.0)
    await _fill(store, clock)
    hits = await store.recall("When did Caroline go to the support group?", k=10, reinforce=False)
    got = [(h.item.content, h.score) for h in hits]
    expected = await _reference(Clock(start), embed, "reference")
    assert [c for c, _ in got] == [c for c, _ in expected]
    assert [s for _, s in got] == pytest.approx([s for _, s in expected], abs=1e-6)
    assert got[0][0] == "Caroline went to the LGBTQ support group on Tuesday"


async def test_term_statistics_follow_writes_updates_and_forgets(env: StoreEnv) -> None:
    store = env.make(TableEmbedder())
    ids = await store.remember_many([MemoryInput(t) for t in CORPUS[:4]])
    assert await _stats(store) == _expected(CORPUS[:4])
    await store.forget(ids[0])
    assert await _stats(store) == _expected(CORPUS[1:4])
    await store.update(ids[1], content="Melanie painted the lake again")
    assert await _stats(store) == _expected(["Melanie painted the lake again", *CORPUS[2:4]])
    assert not await store.forget(ids[0])  # already gone: no double decrement
    assert await _stats(store) == _expected(["Melanie painted the lake again", *CORPUS[2:4]])
    await store.remember("namespaced text", scope=Scope(namespace="other"))
    assert await _stats(store, "other") == _expected(["namespaced text"])
    await store.forget_by_scope(Scope())
    assert await _stats(store) == {}
    assert await _stats(store, "other") == _expected(["namespaced text"])


async def test_term_statistics_stay_exact_under_racing_updates_and_forgets(env: StoreEnv) -> None:
    """Each update removes from the statistics the text it replaced, whatever another
    writer did between its read and its write (two updates both read the same old
    text; a forget deletes the memory an update read)."""
    store = env.make(TableEmbedder())
    for _ in range(3):
        a, b = await store.remember_many([MemoryInput(t) for t in CORPUS[:2]])
        await asyncio.gather(
            store.update(a, content="Caroline moved to Lisbon"),
            store.update(a, content="Caroline moved to Porto"),
        )
        outcome = await asyncio.gather(
            store.update(b, content="Melanie sold a painting"),
            store.forget(b),
            return_exceptions=True,
        )
        assert all(not isinstance(o, Exception) or isinstance(o, NotFoundError) for o in outcome)
        contents = [i.content for i in (await store.list(limit=100)).items]
        assert await _stats(store) == _expected(contents)
        await store.forget_by_scope(Scope())


async def test_term_statistics_of_a_batch_spanning_namespaces(env: StoreEnv) -> None:
    """A batch adds its texts' terms up per namespace, once (not per memory)."""
    store = env.make(TableEmbedder())
    texts = {"n1": ["alpha beta", "gamma delta alpha"], "n2": ["beta gamma", "beta"]}
    await store.remember_many(
        [
            MemoryInput(text, scope=Scope(namespace=ns))
            for i in range(2)
            for ns, batch in texts.items()
            for text in batch[i : i + 1]
        ]
    )
    for ns, batch in texts.items():
        assert await _stats(store, ns) == _expected(batch)
    await store.remember_many([MemoryInput("alpha omega", scope=Scope(namespace="n2"))])
    assert await _stats(store, "n2") == _expected([*texts["n2"], "alpha omega"])


async def test_term_statistics_follow_capacity_evictions(env: StoreEnv) -> None:
    clock = Clock()
    store = env.make(TableEmbedder(), clock=clock, max_items_per_scope=2)
    for i, text in enumerate(CORPUS[:4]):
        await store.remember(text, importance=0.1 * (i + 1))
        clock.now += 60
    remaining = sorted(i.content for i in (await store.list()).items)
    assert len(remaining) == 2
    assert await _stats(store) == _expected(remaining)


async def test_store_written_before_hybrid_recall_is_upgraded(env: StoreEnv) -> None:
    embed = TableEmbedder()
    q = random_unit("q-upgrade")
    embed.set("where is the silver trumpet?", q)
    embed.set("the silver trumpet is in the attic", near(q, 1.0, "far"))
    name = f"up{uuid.uuid4().hex[:12]}"
    old = env.make(embed, name=name, default_threshold=0.33)
    await old.remember("the silver trumpet is in the attic")
    await old.remember("something else entirely")
    # Make it look like a schema-1 store: no lex fields, no statistics, no marker, and
    # on FT servers an index without the lex field.
    ids = [i.id for i in (await old.list()).items]
    for memory_id in ids:
        await _raw(old, "HDEL", f"{name}:mem:{memory_id}", "lex")
    await _raw(old, "DEL", f"{name}:__mem_df:{namespace_token(None)}")
    await _raw(old, "HDEL", f"{name}:__mem_meta", "lexical")
    await _raw(old, "HSET", f"{name}:__mem_meta", "schema_version", "1")
    if env.expected_backend == "ft":
        await _raw(old, "FT.DROPINDEX", f"{name}:mem:idx")
        await _raw(
            old, "FT.CREATE", f"{name}:mem:idx", "ON", "HASH", "PREFIX", "1", f"{name}:mem:",
            "SCHEMA", "vector", "VECTOR", "HNSW", "6", "TYPE", "FLOAT32", "DIM",
            str(embed.dim), "DISTANCE_METRIC", "COSINE", "namespace", "TAG", "CASESENSITIVE",
            "session", "TAG", "CASESENSITIVE",  # every schema of ours has it
        )  # fmt: skip
    fresh = env.make(embed, name=name, default_threshold=0.33)
    status = await fresh.ensure_index()
    assert status.backend == env.expected_backend
    assert await _stats(fresh) == _expected(
        ["the silver trumpet is in the attic", "something else entirely"]
    )
    for _ in range(100):  # FT.CREATE re-indexes the existing hashes asynchronously
        hits = await fresh.recall("where is the silver trumpet?", reinforce=False)
        if hits:
            break
        await asyncio.sleep(0.02)
    assert [h.item.content for h in hits] == ["the silver trumpet is in the attic"]
    assert "lexical" in hits[0].matched and hits[0].distance > 0.33


async def test_a_word_most_memories_hold_brings_no_lexical_candidates(env: StoreEnv) -> None:
    """The lexical search looks only among the memories holding the query's rarest terms
    (within a budget of memories visited): "user", held by more memories than the
    budget, brings none of them, while the one holding the rare word is found."""
    embed = TableEmbedder()
    q = random_unit("q-common")
    query = "what does the user say about the purple elephant?"
    embed.set(query, q)
    embed.set("the user saw a purple elephant", near(q, 1.0, "rare"))
    common = [f"the user note number {i}" for i in range(130)]
    for i, text in enumerate(common):  # the later written, the nearer: the 50 nearest
        embed.set(text, near(q, 0.97 - 0.0005 * i, f"u{i}"))  # are not the first written
    # budget = max(lexical_budget, 2 x 50 candidates) = 100 < 131 memories with "user"
    store = env.make(embed, default_threshold=0.33, lexical_budget=5)
    await store.remember("the user saw a purple elephant")
    await store.remember_many([MemoryInput(text) for text in common])
    hits = await store.recall(query, k=3, reinforce=False)
    assert [h.item.content for h in hits] == ["the user saw a purple elephant"]
    assert hits[0].matched == frozenset({"lexical"})
    # The 50 semantic candidates and the one lexical match: no memory found by "user".
    assert hits.candidates == 51
    # With a budget above the namespace's size every term searches: "user" brings 20
    # lexical candidates (equal scores: the servers break ties by the first written),
    # some of them beyond the 50 nearest.
    wide = env.make(embed, name=store.name, default_threshold=0.33, lexical_budget=1000)
    hits = await wide.recall(query, k=3, reinforce=False)
    assert hits[0].item.content == "the user saw a purple elephant"
    assert hits.candidates > 51


async def test_store_of_schema_3_gets_its_term_tokens(env: StoreEnv) -> None:
    """A store written before ``lex_terms`` (schema 3, the legacy vector form) is
    upgraded in place: every memory gets its term tokens and the lexical channel finds
    memories by them."""
    embed = TableEmbedder()
    q = random_unit("q-schema3")
    embed.set("where is the copper kettle?", q)
    embed.set("the copper kettle is on the shelf", near(q, 1.0, "far"))
    name = f"s3{uuid.uuid4().hex[:12]}"
    old = env.make(embed, name=name, default_threshold=0.33, ft_dialect="baseline")
    await old.remember("the copper kettle is on the shelf")
    await old.remember("something else entirely")
    session = Scope(session_id="s1")
    embed.set("the kettle whistles in this session", near(q, 0.2, "sess"))
    in_session = await old.remember(
        "the kettle whistles in this session", scope=session, durability="session"
    )
    ids = [i.id for i in (await old.list()).items]

    async def hdel(key: str, *fields: str) -> None:
        if env.server.kind == "valkey-search-1.0":
            # 1.0.2 leaves every other plain write to a hash a script wrote hanging.
            script = "return redis.call('HDEL', KEYS[1], unpack(ARGV))"
            await _raw(old, "EVAL", script, "1", key, *fields)
        else:
            await _raw(old, "HDEL", key, *fields)

    await hdel(f"{name}:mem:{in_session}", "lex_terms", "svec")
    for memory_id in ids:
        await hdel(f"{name}:mem:{memory_id}", "lex_terms")
    await _raw(old, "HSET", f"{name}:__mem_meta", "lexical", lexical.LEGACY_VECTOR_FORM)
    await _raw(old, "HSET", f"{name}:__mem_meta", "schema_version", "3")
    if env.expected_backend == "ft":
        await _raw(old, "FT.DROPINDEX", f"{name}:mem:idx")
        await _raw(
            old, "FT.CREATE", f"{name}:mem:idx", "ON", "HASH", "PREFIX", "1", f"{name}:mem:",
            "SCHEMA", "vector", "VECTOR", "HNSW", "6", "TYPE", "FLOAT32", "DIM",
            str(embed.dim), "DISTANCE_METRIC", "COSINE", "lex", "VECTOR", "FLAT", "6", "TYPE",
            "FLOAT32", "DIM", "256", "DISTANCE_METRIC", "IP", "namespace", "TAG",
            "CASESENSITIVE", "session", "TAG", "CASESENSITIVE",
        )  # fmt: skip
    fresh = env.make(embed, name=name, default_threshold=0.33, ft_dialect="baseline")
    await fresh.ensure_index()
    for memory_id in ids:
        tokens = await _raw(fresh, "HGET", f"{name}:mem:{memory_id}", "lex_terms")
        assert tokens, memory_id
    meta = await _raw(fresh, "HGET", f"{name}:__mem_meta", "lexical")
    assert (meta.decode() if isinstance(meta, bytes) else meta) == lexical.VECTOR_FORM
    for _ in range(100):  # FT.CREATE re-indexes the existing hashes asynchronously
        hits = await fresh.recall("where is the copper kettle?", reinforce=False)
        if hits:
            break
        await asyncio.sleep(0.02)
    assert [h.item.content for h in hits] == ["the copper kettle is on the shelf"]
    assert "lexical" in hits[0].matched
    # The session memory got its FLAT embedding copy: the session pool finds it.
    hits = await fresh.recall("where is the copper kettle?", scope=session, reinforce=False)
    assert in_session in [h.item.id for h in hits]


def _words(n: int, seed: int) -> str:
    rng = random.Random(seed)
    return " ".join("".join(rng.choices(string.ascii_lowercase, k=7)) for _ in range(n))


async def test_a_long_query_and_the_largest_filter_reach_the_server(env: StoreEnv) -> None:
    """A 500-term query (4 KB) made every term a lexical clause in a small namespace, a
    query string valkey-search 1.2 refused ("Query string is too long"); the rarest
    terms that fit are sent, and all of them still score. The largest filter the bound
    admits (a full scope, 64 tags, 40 label values) goes with it; 16 keys of 16 values,
    what a memory may carry, are refused before anything is sent (the embedder is not
    even asked)."""
    embed = TableEmbedder()
    store = env.make(embed, default_threshold=2.0)
    scope = Scope(namespace="acme", agent_id="agent one", thread_id="thread/1", session_id="s 1")
    tags = [f"tag {i}" for i in range(64)]
    labels = {f"k{i}": [f"v {j}" for j in range(10)] for i in range(4)}
    target = await store.remember(
        "the deploy runs on friday afternoon", scope=scope, tags=tags,
        labels={key: ["v 3"] for key in labels},
    )  # fmt: skip
    await store.remember("lunch is at noon", scope=scope, tags=tags[:63], labels=labels)
    query = _words(500, 1) + " deploy"
    hits = await store.recall(query, scope=scope, k=5)
    assert target in [h.item.id for h in hits]
    assert "lexical" in next(h for h in hits if h.item.id == target).matched
    filtered = await store.recall(query, scope=scope, k=5, tags=tags, labels=labels)
    assert [h.item.id for h in filtered] == [target]
    assert "lexical" in filtered[0].matched

    widest = {f"k{i}": [f"v {j}" for j in range(16)] for i in range(16)}
    calls = embed.calls
    with pytest.raises(InvalidInputError) as refused:
        await store.recall("deploy", scope=scope, labels=widest)
    assert refused.value.field == "labels" and "bytes of query" in str(refused.value)
    with pytest.raises(InvalidInputError):
        await store.recall_by_vector(random_unit("q"), labels=widest)
    assert embed.calls == calls
