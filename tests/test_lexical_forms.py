"""The lexical form belongs to the store: processes of different ``ft_dialect`` settings
sharing a store never convert it back and forth."""

from __future__ import annotations

import uuid

import pytest
import valkey

from agent_memory import IndexMismatchError, SyncMemoryStore
from agent_memory.backends.upgrade import choose_form
from agent_memory.schema.lexical import TEXT_FORM, VECTOR_FORM
from tests.conftest import DialectAudit, ServerInfo, _Servers
from tests.support import TableEmbedder


@pytest.fixture
def server(servers: _Servers) -> ServerInfo:
    return servers.get("valkey-search")  # RediSearch: both lexical forms are possible


def test_choose_form_rules() -> None:
    assert choose_form(None, 0, wanted=TEXT_FORM, server_has_text=True) == TEXT_FORM
    assert choose_form(VECTOR_FORM, 3, wanted=TEXT_FORM, server_has_text=True) == VECTOR_FORM
    assert choose_form(VECTOR_FORM, 2, wanted=TEXT_FORM, server_has_text=True) == TEXT_FORM
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
