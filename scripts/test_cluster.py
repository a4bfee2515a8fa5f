#!/usr/bin/env python3
"""Start and stop a real 3-primary Valkey cluster on free loopback ports.

Each node is the Valkey 9.1 of ``scripts/test_servers.py`` started with
``--cluster-enabled yes`` (plus any module and arguments the caller gives). The cluster is
formed as ``valkey-cli --cluster create`` forms it, with plain commands: each primary
takes an equal share of the slots and its own config epoch, the nodes meet, and each
replica replicates its primary; then we wait until every live node reports
``cluster_state:ok``. A cluster that does not come up raises :class:`ClusterStartError`
carrying the nodes' logs.

Usage:
  python scripts/test_cluster.py start   # prints the URL of one node, keeps running
  python scripts/test_cluster.py stop    # stops what `start` started
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import test_servers
import valkey

from agent_memory.embedded import ServerProcess, free_port

NODES = 3  # primaries
SLOTS = 16_384
NODE_TIMEOUT_MS = 5000
_BUS_OFFSET = 10_000  # the cluster bus listens on port + 10000
_COORDINATOR_OFFSET = 20_294  # valkey-search's coordinator listens on port + 20294 (gRPC)
_MAX_PORT = 65_535 - _COORDINATOR_OFFSET


class ClusterStartError(RuntimeError):
    """The cluster did not form; the message carries the logs."""


@dataclass
class Cluster:
    nodes: list[ServerProcess]
    root: Path
    appendonly: bool = False
    extra_args: tuple[str, ...] = ()
    node_timeout_ms: int = NODE_TIMEOUT_MS
    killed: set[int] = field(default_factory=set)
    kind: str = "valkey"
    module_args: tuple[str, ...] = ()

    @property
    def url(self) -> str:
        return self.nodes[0].url

    @property
    def ports(self) -> list[int]:
        return [node.port for node in self.nodes]

    def kill(self, index: int) -> None:
        """SIGKILL node ``index`` (it stays down until :meth:`restart`)."""
        self.nodes[index].kill()
        self.killed.add(index)

    def wait_ok(self, timeout: float = 30.0) -> None:
        """Wait until every live node reports ``cluster_state:ok`` (after a failover,
        say)."""
        _wait_ok(self, timeout)

    def role(self, index: int) -> str:
        """``master`` or ``slave``, as node ``index`` sees itself."""
        role = _ask(self.nodes[index].port, "ROLE")[0]
        return role.decode() if isinstance(role, bytes) else str(role)

    def logs(self) -> str:
        return "\n".join(f"--- node {n.port} ---\n{n.log_tail(30)}" for n in self.nodes)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def restart(self, index: int, *, timeout: float = 30.0) -> ServerProcess:
        """Start node ``index`` again on its port, data and ``nodes.conf`` (after a kill),
        and wait until the cluster is ok again."""
        node = _start_node(self.root, index, self.nodes[index].port, self.appendonly,
                           self.extra_args, self.node_timeout_ms, self.kind,
                           self.module_args)  # fmt: skip
        self.nodes[index] = node
        self.killed.discard(index)
        _wait_ok(self, timeout)
        return node


def _start_node(
    root: Path,
    index: int,
    port: int,
    appendonly: bool,
    extra_args: tuple[str, ...],
    node_timeout_ms: int = NODE_TIMEOUT_MS,
    kind: str = "valkey",
    module_args: tuple[str, ...] = (),
) -> ServerProcess:
    node_dir = root / f"node-{index}"
    return test_servers.start(
        kind,
        node_dir,
        port=port,
        module_args=module_args,
        appendonly=appendonly,
        extra_args=(
            "--cluster-enabled", "yes",
            "--cluster-config-file", str(node_dir / "nodes.conf"),
            "--cluster-node-timeout", str(node_timeout_ms),
            "--repl-diskless-sync-delay", "0",  # replicas sync at once, not after 5 s
            *extra_args,
        ),
    )  # fmt: skip


def _wait_ok(cluster: Cluster, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        live = [port for i, port in enumerate(cluster.ports) if i not in cluster.killed]
        if all(_cluster_ok(port) for port in live):
            return
        time.sleep(0.2)
    raise ClusterStartError(f"cluster_state did not become ok within {timeout}s:\n{cluster.logs()}")


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_with_companions(port: int) -> bool:
    return all(_bindable(port + offset) for offset in (0, _BUS_OFFSET, _COORDINATOR_OFFSET))


def cluster_port(taken: set[int]) -> int:
    """A free port whose cluster bus port (port + 10000) and search coordinator port
    (port + 20294) are free and valid too."""
    for _ in range(200):
        port = free_port()
        if port <= _MAX_PORT and port not in taken and _free_with_companions(port):
            return port
    for port in range(20000, _MAX_PORT):  # the kernel keeps handing out high ports
        if port not in taken and _free_with_companions(port):
            return port
    raise ClusterStartError("no free port triple (port, +10000, +20294) on loopback")


def _ask(port: int, *command: str, timeout: float = 5.0) -> Any:
    """One command to one node (no cluster routing), the reply undecoded."""
    node = valkey.Valkey(host="127.0.0.1", port=port, socket_timeout=timeout,
                         socket_connect_timeout=timeout)  # fmt: skip
    try:
        return node.execute_command(*command)
    finally:
        node.close()


def _info(port: int, section: str) -> str:
    try:
        reply = (
            _ask(port, "INFO", section) if section != "cluster" else _ask(port, "CLUSTER", "INFO")
        )
    except valkey.ValkeyError:
        return ""
    if isinstance(reply, dict):  # valkey-py parses INFO into a dict
        return "\n".join(f"{k}:{v}" for k, v in reply.items())
    return reply.decode() if isinstance(reply, bytes) else str(reply)


def _cluster_ok(port: int) -> bool:
    return "cluster_state:ok" in _info(port, "cluster")


def _form(cluster: Cluster) -> None:
    """Assign slots and epochs to the primaries, make every node meet the first, and
    attach each replica (the nodes after the primaries) to its primary."""
    primaries = cluster.ports[:NODES]
    share = SLOTS // NODES
    for i, port in enumerate(primaries):
        last = SLOTS - 1 if i == NODES - 1 else (i + 1) * share - 1
        _ask(port, "CLUSTER", "ADDSLOTSRANGE", str(i * share), str(last))
        _ask(port, "CLUSTER", "SET-CONFIG-EPOCH", str(i + 1))
    for port in cluster.ports[1:]:
        _ask(port, "CLUSTER", "MEET", "127.0.0.1", str(cluster.ports[0]))
    ids = [_ask(port, "CLUSTER", "MYID") for port in primaries]
    deadline = time.monotonic() + 30
    for offset, port in enumerate(cluster.ports[NODES:]):
        primary = ids[offset % NODES].decode()
        while True:  # the replica must have learnt of its primary through gossip first
            try:
                _ask(port, "CLUSTER", "REPLICATE", primary)
                break
            except valkey.ResponseError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)


def start(
    data_dir: Path | None = None,
    *,
    timeout: float = 30.0,
    appendonly: bool = False,
    extra_args: tuple[str, ...] = (),
    replicas: int = 0,
    node_timeout_ms: int = NODE_TIMEOUT_MS,
    kind: str = "valkey",
    module_args: tuple[str, ...] = (),
) -> Cluster:
    """Start 3 cluster-enabled primaries (and ``replicas`` replicas of each), create the
    cluster and wait until it is ok. ``node_timeout_ms`` is how long a node may be
    unreachable before the cluster fails it over (when it has a replica). ``kind`` is a
    server kind of ``scripts/test_servers.py``: ``valkey``, or a valkey-search kind, whose
    module then runs with ``module_args`` (default ``--use-coordinator``).

    Raises:
        ClusterStartError: a node did not start or the cluster did not form in time.
    """
    root = data_dir or Path(tempfile.mkdtemp(prefix="agent-memory-cluster-"))
    if kind in test_servers.VALKEY_SEARCH_KINDS and not module_args:
        module_args = ("--use-coordinator",)  # searches fan out to every shard
    nodes: list[ServerProcess] = []
    try:
        for index in range(NODES * (1 + replicas)):
            port = cluster_port({node.port for node in nodes})
            nodes.append(
                _start_node(
                    root, index, port, appendonly, extra_args, node_timeout_ms, kind, module_args
                )
            )
    except Exception as exc:
        for node in nodes:
            node.stop()
        raise ClusterStartError(f"a cluster node failed to start: {exc}") from exc
    cluster = Cluster(nodes, root, appendonly, extra_args, node_timeout_ms, kind=kind,
                      module_args=module_args)  # fmt: skip
    try:
        _form(cluster)
    except valkey.ValkeyError as exc:
        cluster.stop()
        raise ClusterStartError(f"forming the cluster failed: {exc}\n{cluster.logs()}") from exc
    try:
        _wait_ok(cluster, timeout)
        _wait_synced(cluster, timeout)
        if kind in test_servers.VALKEY_SEARCH_KINDS:
            _wait_coordinator(cluster, timeout)
    except ClusterStartError:
        cluster.stop()
        raise
    return cluster


def _wait_coordinator(cluster: Cluster, timeout: float) -> None:
    """Create and drop a throw-away index from each primary in turn, so that the search
    coordinator has its channels between every pair of shards before a test times its
    first command. The first FT.CREATE sent from a node of a cluster that has just formed
    can take seconds: Valkey 9.1 drops a module's cluster-bus message that is the first
    on a new link ("sent a lightweight message of type module as its first message"),
    and valkey-search 1.2.1 then retries until the metadata reaches that shard."""
    probe = ("FT.CREATE", "agent-memory-probe", "ON", "HASH", "PREFIX", "1", "agent-memory-probe:",
             "SCHEMA", "v", "VECTOR", "FLAT", "6", "TYPE", "FLOAT32", "DIM", "2",
             "DISTANCE_METRIC", "COSINE")  # fmt: skip
    deadline = time.monotonic() + timeout
    for port in cluster.ports[:NODES]:
        for step in (probe, ("FT.DROPINDEX", "agent-memory-probe")):
            while True:  # "Unable to contact all cluster members" until the links work
                try:
                    _ask(port, *step, timeout=timeout)
                    break
                except valkey.ValkeyError as exc:
                    if "already exists" in str(exc) or "not found" in str(exc):
                        break  # an earlier try went through after all
                    if time.monotonic() > deadline:
                        raise ClusterStartError(
                            f"the search coordinator did not answer: {exc}\n{cluster.logs()}"
                        ) from exc
                    time.sleep(0.2)


def _wait_synced(cluster: Cluster, timeout: float) -> None:
    """Wait until every replica has finished its first sync (a replica that never
    synced cannot take over from its primary)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        infos = [_info(port, "replication") for port in cluster.ports]
        if all("role:master" in i or "master_link_status:up" in i for i in infos):
            return
        time.sleep(0.2)
    raise ClusterStartError(f"replicas did not sync within {timeout}s:\n{cluster.logs()}")


def _state_file() -> Path:
    return test_servers.cache_dir() / "cluster.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("start", "stop"))
    args = parser.parse_args(argv)
    if args.action == "start":
        cluster = start()
        pids = [node.process.pid for node in cluster.nodes]
        _state_file().write_text(json.dumps({"pids": pids, "url": cluster.url}))
        print(cluster.url)
        return 0
    if not _state_file().exists():
        print("no cluster was started")
        return 0
    state = json.loads(_state_file().read_text())
    for pid in state["pids"]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(pid), signal.SIGTERM)
    _state_file().unlink(missing_ok=True)
    print(f"stopped the cluster at {state['url']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
