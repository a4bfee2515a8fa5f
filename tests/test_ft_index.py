"""Pure pieces of the FT index upkeep on a cluster: reading ``CLUSTER INFO`` and routing a
command to the primary it names (no server: canned replies and a stand-in node list)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from agent_memory.backends.ft_index import cluster_size
from agent_memory.core.clients import _route
from agent_memory.core.effects import command
from agent_memory.errors import ReplyParseError


def _finish(op: Any, reply: Any) -> Any:
    sent = next(op)
    assert sent.args == ("CLUSTER", "INFO")
    with pytest.raises(StopIteration) as done:
        op.send(reply)
    return done.value.value


@pytest.mark.parametrize(
    "reply",
    [
        "cluster_state:ok\r\ncluster_slots_assigned:16384\r\ncluster_size:3\r\n",
        b"cluster_state:ok\r\ncluster_size:3\r\ncluster_current_epoch:6\r\n",
        {"cluster_state": "ok", "cluster_size": "3"},  # a client package's parsed form
    ],
)
def test_cluster_size_from_every_reply_shape(reply: Any) -> None:
    assert _finish(cluster_size(), reply) == 3


def test_cluster_size_missing_is_a_parse_error() -> None:
    with pytest.raises(ReplyParseError):
        _finish(cluster_size(), "cluster_state:fail\r\n")


@dataclass(frozen=True)
class _Node:
    name: str


class FakeCluster:  # "Cluster" in the name and get_primaries(): what the router checks
    def __init__(self) -> None:
        self.nodes = [_Node("127.0.0.1:7002"), _Node("127.0.0.1:7000"), _Node("127.0.0.1:7001")]

    def get_primaries(self) -> list[_Node]:
        return list(self.nodes)

    def get_random_node(self) -> _Node:
        return self.nodes[0]


def test_a_command_naming_its_node_goes_to_that_primary_by_address_order() -> None:
    client = FakeCluster()
    for i, expected in enumerate(["127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002"]):
        route = _route(client, command("FT.INFO", "idx", node=i))
        assert route["target_nodes"].name == expected
    assert _route(client, command("FT.SEARCH", "idx", "*"))["target_nodes"] in client.nodes
    assert _route(client, command("HGET", "k", "f")) == {}  # keyed: the client routes it
    assert _route(object(), command("FT.INFO", "idx", node=1)) == {}  # not a cluster


def _ctx() -> Any:
    from types import SimpleNamespace

    return SimpleNamespace(
        keys=SimpleNamespace(name="s", index="s:mem:idx"), settings=SimpleNamespace(cluster=True)
    )


def _info(backfilling: bool) -> list[Any]:
    return [
        "index_name", "s:mem:idx", "num_docs", 10, "backfill_in_progress",
        1 if backfilling else 0, "backfill_complete_percent", 40.0 if backfilling else 100.0,
    ]  # fmt: skip


def _drive(op: Any, replies: list[Any]) -> list[Any]:
    """Run an operation, answering each command or batch with the next canned reply
    (and each pause with nothing); returns the effects it yielded."""
    from agent_memory.core.effects import Sleep

    sent, step = [], next(op)
    try:
        while True:
            sent.append(step)
            step = op.send(None if isinstance(step, Sleep) else replies.pop(0))
    except StopIteration:
        return sent


def test_a_primary_out_of_reach_fails_the_shard_check_as_unavailable() -> None:
    """A search fanned out now could leave that primary's memories out without an error
    (valkey-search 1.0 does), so the check raises and the caller checks again next time."""
    from agent_memory.backends.ft_index import repair_shards
    from agent_memory.errors import ServerUnavailableError

    down = ServerUnavailableError("connection refused")
    with pytest.raises(ServerUnavailableError):
        _drive(repair_shards(_ctx()), ["cluster_size:3\r\n", [_info(False), down, _info(False)]])


def test_the_shard_check_waits_while_a_restarted_primary_re_indexes() -> None:
    from agent_memory.backends.ft_index import repair_shards
    from agent_memory.core.effects import Batch

    size = "cluster_size:2\r\n"
    busy, done = [_info(False), _info(True)], [_info(False), _info(False)]
    sent = _drive(repair_shards(_ctx()), [size, busy, size, busy, size, done])
    assert sum(isinstance(s, Batch) for s in sent) == 3  # polled until the backfill ended
