"""A store whose server was wiped (restarted without persistence, FLUSHALL) and whose
name was then reopened by a store of another embedding width, while the first store
keeps running."""

from __future__ import annotations

import contextlib
import uuid

import pytest
import valkey

from agent_memory import IndexMismatchError, SyncMemoryStore
from tests.conftest import ALL_KINDS, _Servers
from tests.support import TableEmbedder

# the kinds whose search refuses a query vector of another width than the index's
# (valkey-search 1.0.2 answers it)
_REFUSING = ("valkey-redisearch", "redis-search", "valkey-search-1.2")


def _wipe(client: valkey.Valkey, name: str) -> None:
    """What FLUSHALL does to the store ``name`` (the other tests' data stays)."""
    with contextlib.suppress(valkey.ResponseError):
        client.execute_command("FT.DROPINDEX", f"{name}:mem:idx")
    keys = list(client.scan_iter(match=f"{name}:*", count=1000))
    if keys:
        client.delete(*keys)


@pytest.mark.parametrize("kind", _REFUSING)
def test_recall_after_the_name_was_reopened_with_another_width(
    servers: _Servers, kind: str
) -> None:
    server = servers.get(kind)
    client = valkey.Valkey.from_url(server.url)
    name = f"w{uuid.uuid4().hex[:12]}"
    first = SyncMemoryStore(client, name, TableEmbedder(8))
    first.remember("alpha one")
    _wipe(client, name)
    second = SyncMemoryStore(client, name, TableEmbedder(16))
    second.remember("beta two")
    with pytest.raises(IndexMismatchError) as raised:
        first.recall("alpha")
    message = str(raised.value)
    assert repr(name) in message
    assert "16-dimensional" in message and "produces 8" in message
    with pytest.raises(IndexMismatchError, match="16-dimensional"):  # refused, not sent
        first.remember("alpha three")
    assert len(second.recall("beta two", k=5)) == 1
    client.close()


@pytest.mark.parametrize("kind", ALL_KINDS)
def test_write_after_the_name_was_reopened_with_another_width(servers: _Servers, kind: str) -> None:
    """The first write after the name was reopened reports the memory it wrote with the
    old width; the next is refused before anything is sent."""
    server = servers.get(kind)
    client = valkey.Valkey.from_url(server.url)
    name = f"w{uuid.uuid4().hex[:12]}"
    first = SyncMemoryStore(client, name, TableEmbedder(8))
    first.remember("alpha one")
    _wipe(client, name)
    second = SyncMemoryStore(client, name, TableEmbedder(16))
    second.remember("beta two")
    records = set(client.scan_iter(match=f"{name}:mem:*"))
    with pytest.raises(IndexMismatchError, match="16-dimensional") as raised:
        first.remember("alpha three")
    (landed,) = set(client.scan_iter(match=f"{name}:mem:*")) - records
    assert landed.decode().rsplit(":", 1)[1] in str(raised.value)
    before = sorted(client.scan_iter(match=f"{name}:mem:*"))
    with pytest.raises(IndexMismatchError, match="16-dimensional"):
        first.remember("alpha four")
    assert sorted(client.scan_iter(match=f"{name}:mem:*")) == before
    client.close()
