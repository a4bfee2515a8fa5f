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
