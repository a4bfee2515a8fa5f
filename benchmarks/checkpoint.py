"""LangGraph checkpointer latency: agent-memory's saver against LangGraph's
``InMemorySaver`` and, when ``langgraph-checkpoint-aws`` is installed and runs against
plain Valkey, its ``ValkeySaver``; a bare ``PING`` round trip is the floor.

    .venv/bin/python -m benchmarks.checkpoint            # writes benchmarks/CHECKPOINT.md
    .venv/bin/python -m benchmarks.checkpoint --rounds 3 --ops 50 --out /tmp/cp.md

Scenarios (sync API, one blocking ``valkey`` client per system, plain Valkey 9.1 started
as the test suite does), each timed per call, systems interleaved round by round in a
rotating order, p50 (and p90) over all rounds:

* ``put``: one checkpoint of 3 channels (~2 KB of messages), one channel new, chained
  to its parent;
* ``get_tuple``: the newest checkpoint of a 20-checkpoint thread with 2 pending writes;
* ``graph step``: ``invoke`` of a compiled 2-node ``StateGraph`` on a thread that
  already holds a few turns (reads the latest checkpoint, writes 3 checkpoints and the
  tasks' writes).
"""

from __future__ import annotations

import argparse
import operator
import platform
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langgraph.checkpoint.base import BaseCheckpointSaver, empty_checkpoint
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph

from agent_memory.integrations.checkpoint import AgentMemorySaver
from benchmarks.servers import Servers
from benchmarks.stats import percentile

OUT = Path(__file__).resolve().parent / "CHECKPOINT.md"
MESSAGES = [f"message {i}: " + "lorem ipsum dolor sit amet " * 7 for i in range(10)]


class State(TypedDict):
    messages: Annotated[list[str], operator.add]
    turns: int


def _graph(saver: BaseCheckpointSaver[Any]) -> Any:
    def think(state: State) -> dict[str, Any]:
        return {"messages": [f"thought {len(state['messages'])}"]}

    def answer(state: State) -> dict[str, Any]:
        return {"messages": ["answer"], "turns": state.get("turns", 0) + 1}

    builder = StateGraph(State)
    builder.add_node("think", think)
    builder.add_node("answer", answer)
    builder.add_edge(START, "think")
    builder.add_edge("think", "answer")
    builder.add_edge("answer", END)
    return builder.compile(checkpointer=saver)


def _config(thread: str, checkpoint_id: str | None = None) -> dict[str, Any]:
    configurable: dict[str, Any] = {"thread_id": thread, "checkpoint_ns": ""}
    if checkpoint_id:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def _checkpoint(saver: BaseCheckpointSaver[Any], step: int, versions: dict[str, Any]) -> Any:
    cp = empty_checkpoint()
    versions["messages"] = saver.get_next_version(versions.get("messages"), None)
    versions.setdefault("turns", saver.get_next_version(None, None))
    versions.setdefault("user", saver.get_next_version(None, None))
    cp["channel_versions"] = dict(versions)
    cp["channel_values"] = {"messages": [*MESSAGES, f"step {step}"], "turns": step, "user": "u1"}
    return cp


class System:
    """One checkpointer under test, with its per-scenario state."""

    def __init__(self, name: str, saver: BaseCheckpointSaver[Any], close: Callable[[], None]):
        self.name, self.saver, self.close = name, saver, close
        self.thread = f"bench-{uuid.uuid4().hex[:8]}"
        self.parent: dict[str, Any] | None = None
        self.versions: dict[str, Any] = {}
        self.step = 0
        self.graph = _graph(saver)
        self.read_thread = f"read-{uuid.uuid4().hex[:8]}"
        self.graph_thread = f"graph-{uuid.uuid4().hex[:8]}"

    def put(self) -> None:
        self.step += 1
        cp = _checkpoint(self.saver, self.step, self.versions)
        config = _config(
            self.thread, self.parent["configurable"]["checkpoint_id"] if self.parent else None
        )
        new = {"messages": self.versions["messages"]} if self.parent else dict(self.versions)
        metadata: Any = {"source": "loop", "step": self.step, "parents": {}}
        self.parent = self.saver.put(config, cp, metadata, new)

    def prepare_reads(self) -> None:
        versions: dict[str, Any] = {}
        parent = None
        for step in range(20):
            cp = _checkpoint(self.saver, step, versions)
            config = _config(self.read_thread, parent)
            metadata: Any = {"source": "loop", "step": step, "parents": {}}
            stored = self.saver.put(config, cp, metadata, dict(versions))
            parent = stored["configurable"]["checkpoint_id"]
        self.saver.put_writes(stored, [("messages", "w1"), ("turns", 3)], "task-1")
        for _ in range(3):
            self.graph.invoke({"messages": ["hi"]}, _config(self.graph_thread))

    def get_tuple(self) -> None:
        got = self.saver.get_tuple(_config(self.read_thread))
        assert got is not None and len(got.pending_writes or []) == 2

    def graph_step(self) -> None:
        self.graph.invoke({"messages": ["hi"]}, _config(self.graph_thread))


def _systems(url: str) -> tuple[list[System], list[str]]:
    import valkey

    notes: list[str] = []
    ours = valkey.Valkey.from_url(url)
    systems = [
        System("agent-memory AgentMemorySaver", AgentMemorySaver(ours, name="bench"), ours.close),
        System("langgraph InMemorySaver", InMemorySaver(), lambda: None),
    ]
    try:
        from langgraph_checkpoint_aws.checkpoint.valkey import ValkeySaver

        theirs = valkey.Valkey.from_url(url)
        aws = System("langgraph-checkpoint-aws ValkeySaver", ValkeySaver(theirs), theirs.close)
        aws.put()
        aws.prepare_reads()
        aws.get_tuple()
        systems.append(aws)
    except Exception as exc:  # noqa: BLE001 - reported in the results, not fatal
        notes.append(f"langgraph-checkpoint-aws ValkeySaver not measured: {exc!r}")
    return systems, notes


def run(rounds: int, ops: int, out: Path) -> str:
    servers = Servers()
    try:
        url = servers.url("valkey")
        import valkey

        bare = valkey.Valkey.from_url(url)
        version = bare.info("server").get("valkey_version")
        systems, notes = _systems(url)
        for system in systems:
            if system.name.startswith("agent-memory") or system.name.startswith("langgraph "):
                system.prepare_reads()
        scenarios: dict[str, Callable[[System], Callable[[], None]]] = {
            "put": lambda s: s.put,
            "get_tuple": lambda s: s.get_tuple,
            "graph step": lambda s: s.graph_step,
        }
        samples: dict[tuple[str, str], list[float]] = {}
        floor: list[float] = []
        for r in range(rounds):
            order = systems[r % len(systems) :] + systems[: r % len(systems)]
            for scenario, pick in scenarios.items():
                count = ops if scenario != "graph step" else max(1, ops // 4)
                for system in order:
                    call = pick(system)
                    call()  # warm
                    times = samples.setdefault((scenario, system.name), [])
                    for _ in range(count):
                        start = time.perf_counter()
                        call()
                        times.append(time.perf_counter() - start)
                for _ in range(count):
                    start = time.perf_counter()
                    bare.ping()
                    floor.append(time.perf_counter() - start)
        for system in systems:
            system.close()
        bare.close()
    finally:
        servers.stop_all()
    return _report(samples, floor, systems, notes, rounds, ops, str(version), out)


def _ms(values: list[float], q: float) -> str:
    return f"{percentile(values, q) * 1000:.3f}"


def _report(
    samples: dict[tuple[str, str], list[float]],
    floor: list[float],
    systems: list[System],
    notes: list[str],
    rounds: int,
    ops: int,
    version: str,
    out: Path,
) -> str:
    lines = [
        "# LangGraph checkpointer latency",
        "",
        f"`python -m benchmarks.checkpoint --rounds {rounds} --ops {ops}` on Valkey {version} "
        f"(plain, loopback), Python {platform.python_version()}, {platform.machine()}; "
        "sync API, one blocking `valkey` client per system, systems interleaved round by "
        "round in rotating order. Milliseconds per call, p50 (p90). "
        f"Floor: a bare `PING` round trip, p50 {_ms(floor, 50)} ms (p90 {_ms(floor, 90)}).",
        "",
        "| scenario | " + " | ".join(s.name for s in systems) + " |",
        "|---|" + "---|" * len(systems),
    ]
    for scenario in ("put", "get_tuple", "graph step"):
        cells = [
            f"{_ms(samples[(scenario, s.name)], 50)} ({_ms(samples[(scenario, s.name)], 90)})"
            for s in systems
        ]
        lines.append(f"| {scenario} | " + " | ".join(cells) + " |")
    lines += ["", *(f"- {note}" for note in notes)]
    lines += [
        "- `put`: 3 channels (~2 KB of messages), one new version per put, chained to its parent.",
        "- `get_tuple`: newest of a 20-checkpoint thread, with 2 pending writes.",
        "- `graph step`: `invoke` of a 2-node StateGraph on a thread holding earlier turns.",
        "",
    ]
    text = "\n".join(lines)
    out.write_text(text)
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--ops", type=int, default=200)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args()
    print(run(args.rounds, args.ops, args.out))


if __name__ == "__main__":
    main()
