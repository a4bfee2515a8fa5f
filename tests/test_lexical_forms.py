"""The lexical form belongs to the store: processes of different ``ft_dialect`` settings
sharing a store never convert it back and forth."""

from __future__ import annotations

import uuid

import pytest
import valkey

from agent_memory import IndexMismatchError, SyncMemoryStore
from agent_memory.backends.upgrade import choose_form
from agent_memory.schema.lexical import LEGACY_VECTOR_FORM, TEXT_FORM, VECTOR_FORM
from tests.conftest import DialectAudit, ServerInfo, _Servers
from tests.support import TableEmbedder


@pytest.fixture
def server(servers: _Servers) -> ServerInfo:
    return servers.get("valkey-redisearch")  # RediSearch: both lexical forms are possible


def test_choose_form_rules() -> None:
    assert choose_form(None, 0, wanted=TEXT_FORM, server_has_text=True) == TEXT_FORM
    assert choose_form(VECTOR_FORM, 3, wanted=TEXT_FORM, server_has_text=True) == VECTOR_FORM
    assert choose_form(VECTOR_FORM, 2, wanted=TEXT_FORM, server_has_text=True) == TEXT_FORM
    # schema 2-3 vector stores get their term tokens, and stay in the vector form
    legacy = LEGACY_VECTOR_FORM
    assert choose_form(legacy, 3, wanted=TEXT_FORM, server_has_text=True) == VECTOR_FORM
    assert choose_form(legacy, 3, wanted=VECTOR_FORM, server_has_text=False) == VECTOR_FORM
    assert choose_form(legacy, 2, wanted=TEXT_FORM, server_has_text=True) == TEXT_FORM
    assert choose_form(TEXT_FORM, 3, wanted=VECTOR_FORM, server_has_text=False) == VECTOR_FORM
    with pytest.raises(IndexMismatchError):
        choose_form(TEXT_FORM, 3, wanted=VECTOR_FORM, server_has_text=True)


def test_an_auto_process_keeps_a_baseline_store_as_it_is(server: ServerInfo) -> None:
    name = f"forms{uuid.uuid4().hex[:8]}"
    embed = TableEmbedder()
    client = valkey.Valkey.from_url(server.url)
    baseline = SyncMemoryStore(client, name, embed, ft_dialect="baseline", default_threshold=2.0)
    auto = SyncMemoryStore(client, name, embed, default_threshold=2.0)
    try:
        DialectAudit.baseline_only = True
        first = baseline.remember("the tide tables for Brest")
        assert baseline.ensure_index().features == ()
        DialectAudit.baseline_only = False
        assert "native_text" in auto.ensure_index().features
        second = auto.remember("a note about gardening")
        for store in (baseline, auto):
            assert [h.item.id for h in store.recall("tide tables Brest", k=1)] == [first]
            assert [h.item.id for h in store.recall("gardening note", k=1)] == [second]
        assert client.hget(f"{name}:__mem_meta", "lexical") == VECTOR_FORM.encode()
    finally:
        client.close()


def test_a_baseline_process_refuses_a_text_store(server: ServerInfo) -> None:
    name = f"forms{uuid.uuid4().hex[:8]}"
    client = valkey.Valkey.from_url(server.url)
    try:
        SyncMemoryStore(client, name, TableEmbedder()).remember("written with full text")
        baseline = SyncMemoryStore(client, name, TableEmbedder(), ft_dialect="baseline")
        with pytest.raises(IndexMismatchError):
            baseline.ensure_index()
    finally:
        client.close()


def test_text_form_rescoring_reads_the_stored_terms(server: ServerInfo) -> None:
    """In the full-text form, recall rescores candidates with the terms stored at write
    time (``lex_text``) and analyses the content of a record that has none."""
    name = f"forms{uuid.uuid4().hex[:8]}"
    embed = TableEmbedder()
    query = "tide tables Brest"
    embed.set(query, [1.0] + [0.0] * (embed.dim - 1))
    client = valkey.Valkey.from_url(server.url)
    store = SyncMemoryStore(client, name, embed, default_threshold=2.0)
    try:
        embed.set("the tide tables for Brest", [1.0] + [0.0] * (embed.dim - 1))
        memory_id = store.remember("the tide tables for Brest")
        assert "native_text" in store.ensure_index().features
        key = f"{name}:mem:{memory_id}"

        def score() -> float:
            hits = store.recall(query, k=1)
            assert [h.item.id for h in hits] == [memory_id]  # found semantically
            return hits[0].lexical_score

        assert score() > 0
        client.hset(key, "lex_text", "unrelated words")
        assert score() == 0  # the stored terms, not a fresh analysis of the content
        client.hdel(key, "lex_text")
        assert score() > 0  # no stored terms: the content is analysed
        before = store._ctx.counters.get("corrupt_records", 0)
        client.hset(key, "lex_text", b"tide \xff tables")
        assert score() > 0  # unreadable stored terms: the content is analysed, counted
        assert store._ctx.counters.get("corrupt_records", 0) > before
    finally:
        store.close()
        client.close()


@pytest.mark.parametrize("kind", ["valkey", "valkey-redisearch"])
@pytest.mark.parametrize(
    "damage", ["another type", "a member that is not UTF-8", "content that is not UTF-8"]
)
def test_the_upgrade_of_an_old_store_skips_damaged_records(
    servers: _Servers, kind: str, damage: str
) -> None:
    name = f"forms{uuid.uuid4().hex[:8]}"
    embed = TableEmbedder()
    client = valkey.Valkey.from_url(servers.get(kind).url)
    try:
        writer = SyncMemoryStore(client, name, embed, default_threshold=2.0)
        ids = writer.remember_many([{"content": f"fact number {i}"} for i in range(4)])
        if damage == "another type":
            client.delete(f"{name}:mem:{ids[0]}")
            client.set(f"{name}:mem:{ids[0]}", "junk")
        elif damage == "content that is not UTF-8":
            client.hset(f"{name}:mem:{ids[0]}", "content", b"\xff\xfe")
        else:
            (registry,) = client.keys(f"{name}:__mem_reg:*")
            client.zadd(registry, {b"\xff\xfe": float("inf")})
        client.hdel(f"{name}:__mem_meta", "lexical")  # as written before hybrid recall
        client.hset(f"{name}:__mem_meta", "schema_version", "1")
        reader = SyncMemoryStore(client, name, embed, default_threshold=2.0)
        reader.ensure_index()
        assert reader._ctx.counters["corrupt_records"] >= 1
        assert client.hget(f"{name}:__mem_meta", "lexical") is not None  # upgraded
        found = {h.item.id for h in reader.recall("fact number", k=10, reinforce=False)}
        assert set(ids[1:]) <= found
    finally:
        client.close()


def test_a_record_replaced_during_the_upgrade_is_reported_once_by_its_id(
    servers: _Servers, caplog: pytest.LogCaptureFixture
) -> None:
    """Both writes of a memory whose key turned into another type fail; the report
    named the EVAL's numkeys ("1") and the command name ("HDEL") as memory ids and
    counted the one record twice. Now: once, under the memory's id."""
    import logging

    from agent_memory.backends.upgrade import rebuild_lexical
    from agent_memory.core.effects import Batch
    from agent_memory.core.runner import run_sync

    name = f"forms{uuid.uuid4().hex[:8]}"
    client = valkey.Valkey.from_url(servers.get("valkey").url)
    try:
        store = SyncMemoryStore(client, name, TableEmbedder(), default_threshold=2.0)
        store.ensure_index()
        mid = store.remember("hello world")
        key = f"{name}:mem:{mid}"
        inner = store._executor

        class ReplacesTheKeyBeforeTheWrites:
            def __getattr__(self, attr: str) -> object:
                return getattr(inner, attr)

            def batch(self, batch: Batch) -> object:
                if any(c.name == "EVAL" for c in batch.commands):
                    client.delete(key)
                    client.set(key, "not a hash")
                return inner.batch(batch)

        before = store._ctx.counters.get("corrupt_records", 0)
        caplog.set_level(logging.WARNING)
        run_sync(rebuild_lexical(store._ctx), ReplacesTheKeyBeforeTheWrites())  # type: ignore[arg-type]
        reports = [r.getMessage() for r in caplog.records if "unreadable" in r.getMessage()]
        assert len(reports) == 1 and f"memory {mid} " in reports[0], reports
        assert store._ctx.counters["corrupt_records"] == before + 1
        store.close()
    finally:
        client.close()
