"""The store's search index on real FT servers: an index someone else created under the
store's name, with a schema no release of the library wrote."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import valkey

from agent_memory import IndexMismatchError, MemoryInput, SyncMemoryStore
from agent_memory.backends.ft import FtBackend
from agent_memory.search.parse import parse_index_info
from agent_memory.search.query import VectorIndexSpec, create_index_args
from tests.conftest import ServerInfo
from tests.support import TableEmbedder


@pytest.fixture
def client(search_server: ServerInfo) -> Iterator[valkey.Valkey]:
    client = valkey.Valkey.from_url(search_server.url)
    yield client
    client.close()


def _ours(name: str, *, native_text: bool = False) -> list[str]:
    """The arguments of the FT.CREATE the store sends (the valkey-search 1.0 dialect,
    or RediSearch's with ``native_text``)."""
    return create_index_args(
        f"{name}:mem:idx", f"{name}:mem:", VectorIndexSpec(dim=16), native_text=native_text
    )


def _retyped(args: list[str], field: str, kind: str) -> list[str]:
    """``args`` with ``field`` declared as ``kind`` (without its options)."""
    at = args.index(field) + 1
    end = at + 1
    while end < len(args) and args[end] in ("SEPARATOR", ",", "CASESENSITIVE"):
        end += 1
    return [*args[:at], kind, *args[end:]]


def _without(args: list[str], field: str) -> list[str]:
    at = args.index(field)
    end = at + 2
    while end < len(args) and args[end] in ("SEPARATOR", ",", "CASESENSITIVE"):
        end += 1
    return [*args[:at], *args[end:]]


def _prefixes(client: valkey.Valkey, index: str) -> list[bytes]:
    info = client.execute_command("FT.INFO", index)
    definition = info[info.index(b"index_definition") + 1]
    return list(definition[definition.index(b"prefixes") + 1])


@pytest.mark.parametrize("prefixes", [["elsewhere:"], ["{name}:mem:", "other:"]])
def test_an_index_covering_other_keys_is_refused_and_left_as_it_is(
    client: valkey.Valkey, prefixes: list[str]
) -> None:
    name = f"pfx{uuid.uuid4().hex[:8]}"
    args = _ours(name)
    at = args.index("PREFIX")
    wanted = [p.replace("{name}", name) for p in prefixes]
    client.execute_command("FT.CREATE", *args[:at], "PREFIX", len(wanted), *wanted,
                           *args[at + 3 :])  # fmt: skip
    store = SyncMemoryStore(client, name, TableEmbedder())
    with pytest.raises(IndexMismatchError, match="covers the keys under"):
        store.remember("would never be found")
    assert _prefixes(client, f"{name}:mem:idx") == [p.encode() for p in wanted]
    assert client.keys(f"{name}:mem:*") == []  # nothing written


@pytest.mark.parametrize(("field", "kind"), [("session", "NUMERIC"), ("importance", "TAG")])
def test_an_index_typing_a_field_otherwise_is_refused_and_left_as_it_is(
    client: valkey.Valkey, field: str, kind: str
) -> None:
    name = f"typ{uuid.uuid4().hex[:8]}"
    client.execute_command("FT.CREATE", *_retyped(_ours(name), field, kind))
    store = SyncMemoryStore(client, name, TableEmbedder())
    with pytest.raises(IndexMismatchError, match=f"{field} is {kind}"):
        store.remember("would fail every search")
    info = parse_index_info(client.execute_command("FT.INFO", f"{name}:mem:idx"))
    assert (field, kind) in info.field_types
    assert client.keys(f"{name}:mem:*") == []  # nothing written


def test_an_index_of_ours_lacking_a_field_is_rebuilt_with_it(
    client: valkey.Valkey, search_server: ServerInfo
) -> None:
    name = f"few{uuid.uuid4().hex[:8]}"
    native_text = not search_server.is_valkey_search  # the form the store picks there
    client.execute_command("FT.CREATE", *_without(_ours(name, native_text=native_text), "tags"))
    store = SyncMemoryStore(client, name, TableEmbedder(), default_threshold=2.0)
    tagged = store.remember("a tagged memory", tags=["t1"])
    store.remember("an untagged memory")
    assert [h.item.id for h in store.recall("a tagged memory", tags=["t1"])] == [tagged]


def test_an_index_dropped_right_after_ensure_created_it_does_not_fail_the_store(
    client: valkey.Valkey, search_server: ServerInfo, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process drops the index (an upgrade re-creating it, an operator) between
    the FT.CREATE of ensure_index and its count of foreign documents: the call and the
    store go on (the next search re-creates the index), no raw "not found" error."""
    name = f"drp{uuid.uuid4().hex[:8]}"
    other = valkey.Valkey.from_url(search_server.url)
    preparing = FtBackend.prepare

    def prepare_then_lose_it(self: FtBackend, ctx: Any) -> Any:
        created = yield from preparing(self, ctx)
        other.execute_command("FT.DROPINDEX", f"{name}:mem:idx")
        return created

    monkeypatch.setattr(FtBackend, "prepare", prepare_then_lose_it)
    store = SyncMemoryStore(client, name, TableEmbedder(), default_threshold=2.0)
    try:
        assert store.ensure_index().backend == "ft"
        monkeypatch.undo()
        mid = store.remember("a memory written after the index was lost")
        assert [h.item.id for h in store.recall("a memory written after the index was lost")] == [
            mid
        ]
    finally:
        other.close()


def test_a_store_opened_while_the_index_backfills_waits_for_it(
    client: valkey.Valkey, search_server: ServerInfo
) -> None:
    """Another process has just created the index over memories already stored (an
    upgrade re-creating it, an operator): the server indexes them in the background. A
    store opening now waits for the backfill as the creator does, so its first recall
    finds them (valkey-search answered it with no hits, without an error)."""
    name = f"bkf{uuid.uuid4().hex[:8]}"
    writer = SyncMemoryStore(client, name, TableEmbedder(), ft_dialect="baseline")
    ids = writer.remember_many([MemoryInput(f"memory number {i}") for i in range(3000)])
    client.execute_command("FT.DROPINDEX", f"{name}:mem:idx")
    client.execute_command("FT.CREATE", *_ours(name))
    other = valkey.Valkey.from_url(search_server.url)
    try:
        reader = SyncMemoryStore(other, name, TableEmbedder(), ft_dialect="baseline")
        assert [h.item.id for h in reader.recall("memory number 7", k=1)] == [ids[7]]
    finally:
        other.close()
