"""``agent-memory adopt`` against a store the real BetterDB library created."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.cli.conftest import unique
from tests.test_betterdb_adoption import _peer

pytestmark = pytest.mark.integration


def test_adopt_takes_over_a_peer_store_only_when_asked(cli: Any, search_url: str) -> None:
    name = unique("theirs")
    written = [["written by the peer", {"namespace": "acme"}], ["unscoped peer note", {}]]
    ids = _peer(search_url, name, "write", json.dumps(written))

    refused = cli("--url", search_url, "--name", name, "adopt")
    assert refused.code == 1 and "--replace-index" in refused.err

    taken = cli("--url", search_url, "--name", name, "--json", "adopt", "--replace-index")
    assert taken.code == 0, taken.err
    assert taken.json() == {"adopted": 2, "skipped": 0, "index_replaced": True}
    again = cli("--url", search_url, "--name", name, "adopt")
    assert again.code == 0 and "adopted 0 memories" in again.out

    listed = cli("--url", search_url, "--name", name, "--embedder", "hashing", "--dim", "16",
                 "--json", "list", "--namespace", "acme")  # fmt: skip
    assert listed.code == 0, listed.err
    assert [m["id"] for m in listed.json()["items"]] == [ids["written by the peer"]]
    assert _peer(search_url, name, "recall", "unscoped peer note", "{}")[0] == "unscoped peer note"


def test_adopt_on_a_store_that_does_not_exist(cli: Any, search_url: str) -> None:
    run = cli("--url", search_url, "--name", unique("none"), "adopt")
    assert run.code == 0 and "nothing to adopt" in run.out
    as_json = cli("--url", search_url, "--name", unique("none"), "adopt", "--json")
    assert as_json.code == 0, as_json.err
    assert as_json.json() == {"adopted": 0, "skipped": 0, "index_replaced": False}


@pytest.mark.parametrize("width", ["abc", "0", "-3"])
def test_adopt_with_a_damaged_stored_width(cli: Any, search_url: str, width: str) -> None:
    from agent_memory import SyncMemoryStore
    from agent_memory.embedders import HashingEmbedder

    name = unique("damaged")
    with SyncMemoryStore.from_url(search_url, name=name, embed=HashingEmbedder()) as store:
        store.client.hset(f"{name}:__mem_meta", "dim", width)
    run = cli("--url", search_url, "--name", name, "adopt")
    assert run.code == 1 and run.out == ""
    assert run.err.startswith(f"error: store '{name}' records the vector width '{width}'")
