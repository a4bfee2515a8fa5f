#!/usr/bin/env python3
"""Start and stop a real 3-primary Valkey cluster on free loopback ports.

Each node is the Valkey 8.0 of ``scripts/test_servers.py`` started with
``--cluster-enabled yes``; ``valkey-cli --cluster create`` assigns the slots (and, with
``replicas``, gives each primary that many replicas), then we wait until every live node
reports ``cluster_state:ok``. A cluster that does not come up
raises :class:`ClusterStartError` carrying the nodes' logs and the cli output.

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
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import test_servers

from agent_memory.embedded import ServerProcess, free_port, start_server

NODES = 3  # primaries
NODE_TIMEOUT_MS = 5000
_BUS_OFFSET = 10_000  # the cluster bus listens on port + 10000
_MAX_PORT = 65_535 - _BUS_OFFSET


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
        done = _cli("-h", "127.0.0.1", "-p", str(self.nodes[index].port), "ROLE", timeout=5)
        return done.stdout.split("\n", 1)[0].strip()

    def logs(self) -> str:
        return "\n".join(f"--- node {n.port} ---\n{n.log_tail(30)}" for n in self.nodes)

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()

    def restart(self, index: int, *, timeout: float = 30.0) -> ServerProcess:
        """Start node ``index`` again on its port, data and ``nodes.conf`` (after a kill),
        and wait until the cluster is ok again."""
        node = _start_node(self.root, index, self.nodes[index].port, self.appendonly,
                           self.extra_args, self.node_timeout_ms)  # fmt: skip
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
) -> ServerProcess:
    node_dir = root / f"node-{index}"
    return start_server(
        test_servers.valkey_binary(),
        node_dir,
        port=port,
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


def cluster_port(taken: set[int]) -> int:
    """A free port whose cluster bus port (port + 10000) is free and valid too."""
    for _ in range(200):
        port = free_port()
        if port <= _MAX_PORT and port not in taken and _bindable(port + _BUS_OFFSET):
            return port
    for port in range(20000, _MAX_PORT):  # the kernel keeps handing out high ports
        if port not in taken and _bindable(port) and _bindable(port + _BUS_OFFSET):
            return port
    raise ClusterStartError("no free port pair (port, port + 10000) on loopback")


def _cli(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    cli, env = test_servers.valkey_cli()
    return subprocess.run(
        [str(cli), *args], capture_output=True, text=True, env=env, timeout=timeout, check=False
    )


def _cluster_ok(port: int) -> bool:
    done = _cli("-h", "127.0.0.1", "-p", str(port), "CLUSTER", "INFO", timeout=5)
    return "cluster_state:ok" in done.stdout


def start(
    data_dir: Path | None = None,
    *,
    timeout: float = 30.0,
    appendonly: bool = False,
    extra_args: tuple[str, ...] = (),
    replicas: int = 0,
    node_timeout_ms: int = NODE_TIMEOUT_MS,
) -> Cluster:
    """Start 3 cluster-enabled primaries (and ``replicas`` replicas of each), create the
    cluster and wait until it is ok. ``node_timeout_ms`` is how long a node may be
    unreachable before the cluster fails it over (when it has a replica).

    Raises:
        ClusterStartError: a node did not start or the cluster did not form in time.
    """
    root = data_dir or Path(tempfile.mkdtemp(prefix="agent-memory-cluster-"))
    nodes: list[ServerProcess] = []
    try:
        for index in range(NODES * (1 + replicas)):
            port = cluster_port({node.port for node in nodes})
            nodes.append(_start_node(root, index, port, appendonly, extra_args, node_timeout_ms))
    except Exception as exc:
        for node in nodes:
            node.stop()
        raise ClusterStartError(f"a cluster node failed to start: {exc}") from exc
    cluster = Cluster(nodes, root, appendonly, extra_args, node_timeout_ms)
    addresses = [f"127.0.0.1:{port}" for port in cluster.ports]
    created = _cli(
        "--cluster", "create", *addresses, "--cluster-replicas", str(replicas), "--cluster-yes"
    )
    if created.returncode != 0:
        cluster.stop()
        raise ClusterStartError(
            f"valkey-cli --cluster create failed ({created.returncode}):\n"
            f"{created.stdout}\n{created.stderr}\n{cluster.logs()}"
        )
    try:
        _wait_ok(cluster, timeout)
        _wait_synced(cluster, timeout)
    except ClusterStartError:
        cluster.stop()
        raise
    return cluster


def _wait_synced(cluster: Cluster, timeout: float) -> None:
    """Wait until every replica has finished its first sync (a replica that never
    synced cannot take over from its primary)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        infos = [
            _cli("-h", "127.0.0.1", "-p", str(port), "INFO", "replication", timeout=5).stdout
            for port in cluster.ports
        ]
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
