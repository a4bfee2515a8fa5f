"""The LangGraph checkpointer, against the real ``langgraph`` package and real servers.

* The official ``langgraph-checkpoint-conformance`` suite, every capability, on each
  server kind, through the async methods and through the sync ones (a subclass whose
  async methods call the sync twins), and on a real 3-primary cluster.
* Both client packages, RESP2/RESP3, ``decode_responses`` on and off, sync and async.
* Bad input, TTL (expiry and refresh on read), isolation between threads and
  namespaces (a hypothesis property), binary values, and a compiled StateGraph that
  resumes from its checkpoint.
"""

from __future__ import annotations

import asyncio
import logging
import math
import operator
import time
import uuid
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Annotated, Any, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.checkpoint.base import CheckpointTuple
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.checkpoint.conformance.test_utils import (
    generate_checkpoint,
    generate_config,
    generate_metadata,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.serde.types import ERROR, INTERRUPT
from langgraph.graph import END, START, StateGraph

from agent_memory.errors import CapabilityError, InvalidInputError, StoreClosedError
from agent_memory.integrations.checkpoint import AgentMemorySaver, Layout, codec
from tests.cache.conftest import FLAVOURS, Flavour
from tests.conftest import VALKEY_SEARCH_KINDS, _Servers

pytestmark = pytest.mark.integration

KINDS = ["valkey", "valkey-redisearch", "redis-search"] + [
    k for k in ("valkey-search-1.2",) if k in VALKEY_SEARCH_KINDS
]
RESULTS: dict[str, dict[str, tuple[int, int]]] = {}


class SyncDriven(AgentMemorySaver):
    """The saver with every async method served by its sync twin, so the conformance
    suite (which awaits the async methods) exercises the sync side."""

    async def aget_tuple(self, config: Any) -> CheckpointTuple | None:
        return self.get_tuple(config)

    async def alist(self, config: Any, **kwargs: Any) -> AsyncIterator[CheckpointTuple]:  # type: ignore[override]
        for item in self.list(config, **kwargs):
            yield item

    async def aput(self, config: Any, checkpoint: Any, metadata: Any, new_versions: Any) -> Any:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self, config: Any, writes: Any, task_id: str, task_path: str = ""
    ) -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        self.delete_for_runs(run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self.copy_thread(source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self.prune(thread_ids, strategy=strategy)


def _name() -> str:
    return f"cp{uuid.uuid4().hex[:10]}"


async def _conformance(label: str, make: Any) -> None:
    @checkpointer_test(name=label)
    async def factory() -> AsyncIterator[AgentMemorySaver]:
        saver = make()
        yield saver
        await saver.aclose()

    report = await validate(factory)
    failures = [f for r in report.results.values() for f in r.failures]
    assert not failures, "\n".join(failures)
    assert {cap.value for cap in ALL_CAPABILITIES} == {
        name for name, r in report.results.items() if r.detected
    }
    assert report.conformance_level() == "FULL"
    RESULTS[label] = {n: (r.tests_passed, r.tests_failed) for n, r in report.results.items()}
    total = sum(p for p, _ in RESULTS[label].values())
    print(f"\nconformance {label}: {total} passed, capabilities {sorted(RESULTS[label])}")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("mode", ["async", "sync"])
async def test_conformance(servers: _Servers, kind: str, mode: str) -> None:
    url = servers.get(kind).url
    cls = AgentMemorySaver if mode == "async" else SyncDriven
    await _conformance(f"{kind}-{mode}", lambda: cls.from_url(url, name=_name()))


def test_cluster_lists_every_thread_and_copies_across_slots(cluster_url: str) -> None:
    from redis.cluster import RedisCluster

    client = RedisCluster.from_url(cluster_url, decode_responses=True)
    saver = AgentMemorySaver(client, name=_name())
    threads = [f"thread-{i}" for i in range(12)]  # spread over the three primaries
    for thread in threads:
        stored = saver.put(*_put(saver, thread, "child:1", x=thread))
        saver.put_writes(stored, [("ch", thread)], "task")
    listed = {t.config["configurable"]["thread_id"] for t in saver.list(None)}
    assert listed == set(threads)
    saver.copy_thread(threads[0], "copied")
    got = saver.get_tuple(generate_config("copied", checkpoint_ns="child:1"))
    assert got is not None and got.checkpoint["channel_values"] == {"x": threads[0]}
    saver.delete_for_runs(["r1"])
    assert list(saver.list(None)) == []
    client.close()


@pytest.mark.parametrize("mode", ["async", "sync"])
async def test_conformance_on_a_cluster(cluster_url: str, mode: str) -> None:
    from valkey.asyncio.cluster import ValkeyCluster as AsyncCluster
    from valkey.cluster import ValkeyCluster

    def make() -> AgentMemorySaver:
        if mode == "async":
            return AgentMemorySaver(AsyncCluster.from_url(cluster_url), name=_name())
        return SyncDriven(ValkeyCluster.from_url(cluster_url), name=_name())

    await _conformance(f"cluster-{mode}", make)


# -- clients -------------------------------------------------------------------------


async def _call(saver: AgentMemorySaver, method: str, *args: Any, **kwargs: Any) -> Any:
    """Call the async method of an async saver, the sync one otherwise."""
    if saver._async is not None and saver._sync is None:
        if method == "list":
            return [t async for t in saver.alist(*args, **kwargs)]
        return await getattr(saver, "a" + method)(*args, **kwargs)
    if method == "list":
        return list(saver.list(*args, **kwargs))
    return getattr(saver, method)(*args, **kwargs)


def _put(
    saver: AgentMemorySaver, thread: str, ns: str = "", parent: Any = None, **values: Any
) -> Any:
    config = generate_config(thread, checkpoint_ns=ns)
    if parent is not None:
        config["configurable"]["checkpoint_id"] = parent["configurable"]["checkpoint_id"]
    versions = {k: saver.get_next_version(None, None) for k in values}
    cp = generate_checkpoint(channel_values=values, channel_versions=versions)
    return config, cp, generate_metadata(run_id="r1"), versions


@pytest.mark.parametrize("flavour", FLAVOURS, ids=[f.id for f in FLAVOURS])
async def test_every_client_flavour_round_trips(flavour: Flavour, servers: _Servers) -> None:
    url = servers.get("valkey").url
    client = flavour.client(url)
    saver = AgentMemorySaver(client, name=_name())
    thread = f"t-{flavour.id}"
    blob = bytes(range(256)) * 4  # not UTF-8: must survive decode_responses=True
    stored = await _call(saver, "put", *_put(saver, thread, msg="héllo 🧠", raw=blob))
    await _call(saver, "put_writes", stored, [("ch", blob), (ERROR, "boom")], "task-1")
    got = await _call(saver, "get_tuple", generate_config(thread))
    assert got.checkpoint["channel_values"] == {"msg": "héllo 🧠", "raw": blob}
    assert sorted(w[1] for w in got.pending_writes) == ["__error__", "ch"]
    assert [w[2] for w in got.pending_writes if w[1] == "ch"] == [blob]
    assert len(await _call(saver, "list", generate_config(thread))) == 1
    await _call(saver, "copy_thread", thread, thread + "-copy")
    await _call(saver, "delete_for_runs", ["r1"])
    assert await _call(saver, "get_tuple", generate_config(thread + "-copy")) is None
    await _call(saver, "delete_thread", thread)
    assert await _call(saver, "get_tuple", generate_config(thread)) is None
    closer = getattr(client, "aclose", None) or client.close
    result = closer()
    if asyncio.iscoroutine(result):
        await result


# -- bad input -----------------------------------------------------------------------


@pytest.fixture
def saver(servers: _Servers) -> Iterator[AgentMemorySaver]:
    s = AgentMemorySaver.from_url(servers.get("valkey").url, name=_name())
    yield s
    s.close()


@pytest.mark.parametrize(
    "config",
    [None, {}, {"configurable": {}}, {"configurable": {"thread_id": ""}},
     {"configurable": {"thread_id": None}}, {"configurable": {"thread_id": 1.5}},
     {"configurable": {"thread_id": "t", "checkpoint_ns": 3}},
     {"configurable": {"thread_id": "t", "checkpoint_id": 7}},
     # a lone surrogate cannot be sent: was ServerResponseError (put) or None (get)
     {"configurable": {"thread_id": "t\ud800"}},
     {"configurable": {"thread_id": "t", "checkpoint_ns": "n\udfff"}},
     {"configurable": {"thread_id": "t", "checkpoint_id": "c\ud800"}}],
)  # fmt: skip
def test_bad_configs_raise_invalid_input(saver: AgentMemorySaver, config: Any) -> None:
    with pytest.raises(InvalidInputError):
        saver.get_tuple(config)
    with pytest.raises(InvalidInputError):
        saver.put(config, generate_checkpoint(), generate_metadata(), {})


def test_ids_that_are_not_valid_unicode_are_refused(saver: AgentMemorySaver) -> None:
    calls = [
        lambda: saver.list({"configurable": {"thread_id": "t\ud800"}}),
        lambda: saver.list({"configurable": {"thread_id": "t", "checkpoint_ns": "\udc00"}}),
        lambda: saver.list(
            generate_config("t"), before=generate_config("t", checkpoint_id="\ud800")
        ),
        lambda: saver.delete_thread("t\ud800"),
        lambda: saver.copy_thread("t", "u\ud800"),
        lambda: saver.prune(["t\ud800"]),
    ]
    for call in calls:
        with pytest.raises(InvalidInputError):
            call()


def test_bad_arguments_raise_invalid_input(saver: AgentMemorySaver) -> None:
    config = generate_config("t")
    with pytest.raises(InvalidInputError):  # no checkpoint_id to attach writes to
        saver.put_writes(config, [("ch", 1)], "task")
    stored = saver.put(config, generate_checkpoint(), generate_metadata(), {})
    with pytest.raises(InvalidInputError):
        saver.put_writes(stored, [("ch",)], "task")  # type: ignore[list-item]
    with pytest.raises(InvalidInputError):
        saver.put_writes(stored, [("ch", object())], "task")  # not serialisable
    with pytest.raises(InvalidInputError):
        saver.put(config, {"id": 5}, generate_metadata(), {})  # type: ignore[typeddict-item]
    with pytest.raises(InvalidInputError):
        saver.list(config, limit=-1)
    with pytest.raises(InvalidInputError):
        saver.list(config, filter=["source"])  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        saver.prune(["t"], strategy="oldest")
    with pytest.raises(InvalidInputError):
        saver.delete_thread(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        saver.delete_for_runs([b"r"])  # type: ignore[list-item]
    for ttl in ({"default_ttl": -1}, {"default_ttl": "1"}, {"ttl": 1}, 5):
        with pytest.raises(InvalidInputError):
            AgentMemorySaver.from_url("redis://127.0.0.1:1", ttl=ttl)  # type: ignore[arg-type]
    for name in ("", "a{b}", 3):
        with pytest.raises(InvalidInputError):
            AgentMemorySaver.from_url("redis://127.0.0.1:1", name=name)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        AgentMemorySaver()
    with pytest.raises(InvalidInputError):
        AgentMemorySaver.from_url("http://x")


@pytest.mark.parametrize(
    "ids", [None, 42, 1.5, "ab", b"ab", [None], ["a", 1.5], ["a", b"b"], [""]], ids=repr
)
async def test_prune_and_delete_for_runs_refuse_what_is_not_a_list_of_ids(
    saver: AgentMemorySaver, ids: Any
) -> None:
    # "ab" is one thread's id, not the threads "a" and "b"; a bad id anywhere in the
    # list refuses the whole call before anything is deleted
    threads = ("a", "b", "ab")
    for thread in threads:
        saver.put(
            generate_config(thread), generate_checkpoint(), generate_metadata(run_id=thread), {}
        )
    calls = [
        lambda: saver.prune(ids, strategy="delete"),
        lambda: saver.delete_for_runs(ids),
    ]
    for call in calls:
        with pytest.raises(InvalidInputError):
            call()
    with pytest.raises(InvalidInputError):
        await saver.aprune(ids, strategy="delete")
    with pytest.raises(InvalidInputError):
        await saver.adelete_for_runs(ids)
    assert all(saver.get_tuple(generate_config(t)) is not None for t in threads)
    saver.prune(["ab"], strategy="delete")  # a list of one id: that thread only
    assert [saver.get_tuple(generate_config(t)) is not None for t in threads] == [True, True, False]


async def test_async_only_saver_refuses_sync_calls_and_closed_saver_refuses_all(
    servers: _Servers,
) -> None:
    import valkey.asyncio

    client = valkey.asyncio.Valkey.from_url(servers.get("valkey").url)
    saver = AgentMemorySaver(client, name=_name())
    with pytest.raises(CapabilityError):
        saver.get_tuple(generate_config("t"))
    assert await saver.aget_tuple(generate_config("t")) is None
    await saver.aclose()
    with pytest.raises(StoreClosedError):
        await saver.aget_tuple(generate_config("t"))
    await client.aclose()  # not owned: the saver left it open


async def test_sync_client_serves_async_methods_in_a_thread(servers: _Servers) -> None:
    import redis

    client = redis.Redis.from_url(servers.get("redis-search").url)
    with AgentMemorySaver(client, name=_name()) as saver:
        stored = await saver.aput(*_put(saver, "t", x=1))
        assert (await saver.aget_tuple(stored)).checkpoint["channel_values"] == {"x": 1}  # type: ignore[union-attr]
    assert client.ping()  # not owned: still open
    client.close()


# -- TTL -----------------------------------------------------------------------------


def _pttls(url: str, layout: Layout, thread: str, ns: str = "") -> list[int]:
    import valkey

    raw = valkey.Valkey.from_url(url)
    try:
        return [raw.pttl(k) for k in layout.lane(thread, ns).keys]
    finally:
        raw.close()


def test_ttl_applies_to_every_key_and_is_refreshed_on_read(servers: _Servers) -> None:
    url = servers.get("valkey").url
    with AgentMemorySaver.from_url(url, name=_name(), ttl={"default_ttl": 10}) as saver:
        stored = saver.put(*_put(saver, "t", x=1))
        saver.put_writes(stored, [("ch", 1)], "task")
        ttls = _pttls(url, Layout(saver.name), "t")
        assert all(9 * 60_000 < t <= 10 * 60_000 for t in ttls), ttls
        time.sleep(0.3)
        before = max(_pttls(url, Layout(saver.name), "t"))
        saver.get_tuple(generate_config("t"))
        assert max(_pttls(url, Layout(saver.name), "t")) > before
    no_refresh = {"default_ttl": 10, "refresh_on_read": False}
    with AgentMemorySaver.from_url(url, name=_name(), ttl=no_refresh) as saver:
        saver.put(*_put(saver, "t", x=1))
        time.sleep(0.3)
        before = max(_pttls(url, Layout(saver.name), "t"))
        saver.get_tuple(generate_config("t"))
        assert max(_pttls(url, Layout(saver.name), "t")) <= before


def test_checkpoints_expire(servers: _Servers) -> None:
    url = servers.get("valkey").url
    with AgentMemorySaver.from_url(url, name=_name(), ttl={"default_ttl": 0.005}) as saver:
        saver.put(*_put(saver, "t", x=1))
        assert saver.get_tuple(generate_config("t")) is not None
        time.sleep(0.6)
        assert saver.get_tuple(generate_config("t")) is None
        assert _pttls(url, Layout(saver.name), "t") == [-2, -2, -2, -2]


def test_without_ttl_keys_persist(saver: AgentMemorySaver, servers: _Servers) -> None:
    saver.put(*_put(saver, "t", x=1))
    assert _pttls(servers.get("valkey").url, Layout(saver.name), "t")[:3] == [-1, -1, -1]


# -- isolation and semantics ---------------------------------------------------------

TEXT = st.text(st.characters(codec="utf-8"), min_size=1, max_size=10)


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    a=st.tuples(TEXT, st.one_of(st.just(""), TEXT)), b=st.tuples(TEXT, st.one_of(st.just(""), TEXT))
)
def test_threads_and_namespaces_never_see_each_other(
    saver: AgentMemorySaver, a: tuple[str, str], b: tuple[str, str]
) -> None:
    if a == b:
        return
    saver.delete_thread(a[0])
    saver.delete_thread(b[0])
    stored = saver.put(*_put(saver, a[0], a[1], owner=list(a)))
    saver.put_writes(stored, [("w", "a")], "task")
    assert saver.get_tuple(generate_config(b[0], checkpoint_ns=b[1])) is None
    assert list(saver.list(generate_config(b[0], checkpoint_ns=b[1]))) == []
    if b[0] != a[0]:  # deleting another thread never touches this one
        saver.delete_thread(b[0])
        saver.prune([b[0]], strategy="delete")
        saver.copy_thread(b[0], a[0])
    got = saver.get_tuple(generate_config(a[0], checkpoint_ns=a[1]))
    assert got is not None and got.checkpoint["channel_values"] == {"owner": list(a)}
    assert got.config["configurable"]["thread_id"] == a[0]
    assert got.config["configurable"]["checkpoint_ns"] == a[1]
    assert [w[2] for w in got.pending_writes or []] == ["a"]


def test_list_pages_filters_and_spans_namespaces(saver: AgentMemorySaver) -> None:
    parent = None
    ids = []
    for step in range(250):  # several pages of ops.PAGE
        config, cp, md, versions = _put(saver, "t", parent=parent, n=step)
        md["step"] = step
        parent = saver.put(config, cp, md, versions)
        ids.append(cp["id"])
    saver.put(*_put(saver, "t", "child:1", n=-1))
    listed = [t.checkpoint["id"] for t in saver.list(generate_config("t"))]
    assert listed == list(reversed(ids))
    everything = list(saver.list({"configurable": {"thread_id": "t"}}))
    assert len(everything) == 251
    odd = list(saver.list(generate_config("t"), filter={"step": 7}))
    assert [t.metadata["step"] for t in odd] == [7]
    late = list(saver.list(generate_config("t"), filter={"source": "loop"}, limit=120))
    assert [t.metadata["step"] for t in late] == list(range(249, 129, -1))
    before = generate_config("t", checkpoint_id=ids[10])
    assert [t.checkpoint["id"] for t in saver.list(generate_config("t"), before=before)] == list(
        reversed(ids[:10])
    )
    anywhere = [
        t for t in saver.list(None, limit=5000) if t.config["configurable"]["thread_id"] == "t"
    ]
    assert len(anywhere) == 251
    assert list(saver.list(generate_config("t"), limit=0)) == []


def test_special_writes_replace_regular_writes_keep_first(saver: AgentMemorySaver) -> None:
    stored = saver.put(*_put(saver, "t"))
    saver.put_writes(stored, [("ch", "first"), (INTERRUPT, "i1")], "task", "p")
    saver.put_writes(stored, [("ch", "second"), (INTERRUPT, "i2")], "task", "p")
    got = saver.get_tuple(stored)
    assert got is not None
    assert sorted((w[1], w[2]) for w in got.pending_writes or []) == [
        ("__interrupt__", "i2"),
        ("ch", "first"),
    ]


def test_prune_keeps_the_values_the_latest_checkpoint_needs(saver: AgentMemorySaver) -> None:
    first = saver.put(*_put(saver, "t", a="kept", b="old"))
    config, cp, md, _ = _put(saver, "t", parent=first, a="kept", b="new")
    cp["channel_versions"]["a"] = saver.get_tuple(first).checkpoint["channel_versions"]["a"]  # type: ignore[union-attr]
    saver.put(config, cp, md, {"b": cp["channel_versions"]["b"]})
    saver.prune(["t"])
    (only,) = list(saver.list(generate_config("t")))
    assert only.checkpoint["channel_values"] == {"a": "kept", "b": "new"}
    assert only.parent_config is not None  # the parent id is kept, the parent is gone
    assert saver.get_tuple(only.parent_config) is None


def test_get_next_version_is_monotonic_like_langgraphs(saver: AgentMemorySaver) -> None:
    reference = InMemorySaver()
    version = saver.get_next_version(None, None)
    for _ in range(20):
        following = saver.get_next_version(version, None)
        assert following > version
        version = following
    assert (
        version.split(".")[0] == reference.get_next_version(20, None).split(".")[0] == f"{21:032}"
    )
    assert saver.get_next_version(3, None).startswith(f"{4:032}.")  # type: ignore[arg-type]


class State(TypedDict):
    steps: Annotated[list[str], operator.add]


def _graph(saver: AgentMemorySaver) -> Any:
    def scripted(state: State) -> dict[str, list[str]]:
        return {"steps": [f"step {len(state['steps'])}"]}

    builder = StateGraph(State)
    builder.add_node("scripted", scripted)
    builder.add_edge(START, "scripted")
    builder.add_edge("scripted", END)
    return builder.compile(checkpointer=saver)


async def test_a_compiled_graph_resumes_from_its_checkpoints(servers: _Servers) -> None:
    async with AgentMemorySaver.from_url(servers.get("valkey").url, name=_name()) as saver:
        graph = _graph(saver)
        config = {"configurable": {"thread_id": "conversation"}}
        assert graph.invoke({"steps": ["hi"]}, config)["steps"] == ["hi", "step 1"]
        second = await graph.ainvoke({"steps": ["again"]}, config)
        assert second["steps"] == ["hi", "step 1", "again", "step 3"]
        history = [s.values["steps"] for s in graph.get_state_history(config)]
        assert history[0] == second["steps"] and len(history) == 6
        await saver.adelete_thread("conversation")
        assert graph.get_state(config).values == {}


def test_the_example_runs_and_resumes(servers: _Servers) -> None:
    import importlib.util
    import sys
    from pathlib import Path

    example = Path(__file__).resolve().parents[2] / "examples" / "langgraph_checkpointer.py"
    url = servers.get("valkey").url
    with AgentMemorySaver.from_url(url, name="example") as saver:
        saver.delete_thread("demo")
    # a real module (not runpy's throwaway globals): LangGraph resolves the State
    # annotations in the module's namespace when it compiles the graph
    spec = importlib.util.spec_from_file_location("langgraph_checkpointer_example", example)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        messages = module.main(url)
    finally:
        del sys.modules[spec.name]
    assert messages == [
        "user: hello",
        "assistant: I have seen 1 messages",
        "user: are you still there?",
        "assistant: I have seen 3 messages",
    ]


def test_delete_for_runs_keeps_the_index_of_a_checkpoint_written_meanwhile(
    saver: AgentMemorySaver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A put of the same run while its checkpoints are deleted: its checkpoint stays, and
    stays listed under the run, so the next delete_for_runs finds it."""
    from agent_memory.integrations.checkpoint import ops

    saver.put(*_put(saver, "t1", x=1))
    real_drop = ops._drop

    def racing_drop(layout: Any, work: Any) -> Any:
        yield from real_drop(layout, work)
        saver.put(*_put(saver, "t2", x=2))  # another task of run r1, right now

    monkeypatch.setattr(ops, "_drop", racing_drop)
    saver.delete_for_runs(["r1"])
    monkeypatch.undo()
    assert saver.get_tuple(generate_config("t1")) is None
    assert saver.get_tuple(generate_config("t2")) is not None
    saver.delete_for_runs(["r1"])
    assert saver.get_tuple(generate_config("t2")) is None


# -- damaged data -------------------------------------------------------------------

# what another writer leaves in one checkpoint's fields: (which field, the bytes)
DAMAGE = {
    "metadata-holds-an-int": ("m", b"msgpack\x00\x05"),
    "metadata-not-msgpack": ("m", b"msgpack\x00\xc1"),
    "metadata-unknown-type-tag": ("m", b"pickle\x00abc"),
    "metadata-without-type": ("m", b"no type here"),
    "checkpoint-not-msgpack": ("c", b"msgpack\x00\xc1"),
    "checkpoint-holds-an-int": ("c", b"msgpack\x00\x05"),
    "channel-value-not-msgpack": ("b", b"msgpack\x00\xc1"),
    "pending-write-malformed": ("w", b"3:abc"),
    "pending-write-value-unknown-type": ("w", codec.pack_write("t", "c", "", 1, b"bogus\x00x")),
}


def _damage(url: str, lane: Any, checkpoint_id: str, what: str) -> None:
    import valkey

    field, value = DAMAGE[what]
    raw = valkey.Valkey.from_url(url)
    try:
        if field in ("m", "c"):
            raw.hset(lane.records, f"{field}:{checkpoint_id}", value)
        else:  # the first channel value or pending write the checkpoint lists
            listed = raw.hget(lane.records, f"{field}:{checkpoint_id}")
            raw.hset(lane.values, listed.split(b"\n")[0], value)
    finally:
        raw.close()


def _history(saver: AgentMemorySaver, thread: str, steps: int) -> list[str]:
    """``steps`` checkpoints of ``thread``, each with its own channel value and write."""
    parent, ids = None, []
    for step in range(steps):
        config, cp, md, versions = _put(saver, thread, parent=parent, x=step)
        md["step"] = step
        parent = saver.put(config, cp, md, versions)
        saver.put_writes(parent, [("ch", step)], "task")
        ids.append(cp["id"])
    return ids


def _events(registry: Any, name: str) -> float:
    value = registry.get_sample_value(
        "agent_memory_events_total", {"name": name, "event": "corrupt_records"}
    )
    return value or 0.0


@pytest.mark.parametrize("what", list(DAMAGE))
async def test_a_damaged_checkpoint_is_skipped_logged_and_counted(
    servers: _Servers, what: str, caplog: pytest.LogCaptureFixture
) -> None:
    from prometheus_client import CollectorRegistry

    from agent_memory.errors import ReplyParseError

    url = servers.get("valkey").url
    registry = CollectorRegistry()
    async with AgentMemorySaver.from_url(url, name=_name(), registry=registry) as saver:
        old, middle, new = _history(saver, "t", 3)
        lane = Layout(saver.name).lane("t", "")
        _damage(url, lane, middle, what)
        thread = generate_config("t")

        def ids(found: Any) -> list[str]:
            return [t.checkpoint["id"] for t in found]

        # left out of every listing, the pages going on past it
        assert ids(saver.list(thread)) == [new, old]
        assert ids([t async for t in saver.alist(thread)]) == [new, old]
        assert ids(saver.list(thread, filter={"source": "loop"})) == [new, old]
        assert ids(saver.list(thread, limit=2)) == [new, old]
        assert ids(saver.list({"configurable": {"thread_id": "t"}})) == [new, old]
        assert ids(saver.list(generate_config("t", checkpoint_id=middle))) == []
        assert all(isinstance(t.metadata, dict) for t in saver.list(thread))
        # naming it is a library error saying which checkpoint and what is wrong
        with pytest.raises(ReplyParseError, match=middle):
            saver.get_tuple(generate_config("t", checkpoint_id=middle))
        with pytest.raises(ReplyParseError, match=middle):
            await saver.aget_tuple(generate_config("t", checkpoint_id=middle))
        assert saver.skipped == 9 == _events(registry, saver.name)
        assert f"checkpoint {middle!r} of thread 't'" in caplog.text
        # the newest damaged too: the latest is the newest that reads
        _damage(url, lane, new, what)
        latest = saver.get_tuple(thread)
        assert latest is not None and latest.checkpoint["id"] == old
        assert latest.checkpoint["channel_values"] == {"x": 0}
        assert [w[2] for w in latest.pending_writes or []] == [0]
        assert (await saver.aget_tuple(thread)).checkpoint["id"] == old  # type: ignore[union-attr]
        assert saver.skipped == 13 == _events(registry, saver.name)
        # and later calls work: a graph resumes from there
        newer = saver.put(*_put(saver, "t", parent=latest.config, x=9))
        assert ids(saver.list(thread)) == [newer["configurable"]["checkpoint_id"], old]


async def test_a_thread_of_damaged_checkpoints_reads_as_empty(servers: _Servers) -> None:
    url = servers.get("valkey").url
    with AgentMemorySaver.from_url(url, name=_name()) as saver:
        ids = _history(saver, "t", 3)
        for cid in ids:
            _damage(url, Layout(saver.name).lane("t", ""), cid, "metadata-not-msgpack")
        assert saver.get_tuple(generate_config("t")) is None
        assert list(saver.list(generate_config("t"), filter={"step": 1})) == []
        assert saver.skipped == 6


NOT_UTF8 = b"\xff\xfe-foreign"  # sorts after every id this library writes


@pytest.mark.parametrize("flavour", FLAVOURS, ids=[f.id for f in FLAVOURS])
async def test_ids_and_namespaces_that_are_not_utf8_are_skipped_logged_and_counted(
    flavour: Flavour, servers: _Servers, caplog: pytest.LogCaptureFixture
) -> None:
    """Another writer's members that are not UTF-8: a checkpoint id in the lane's ids
    (with a record, and without one), a namespace entry of the thread. ``list`` and
    ``get_tuple`` read past them (paging included), logging and counting each one met,
    on every client flavour (decoding or not)."""
    import valkey
    from prometheus_client import CollectorRegistry

    url = servers.get("valkey").url
    registry = CollectorRegistry()
    client = flavour.client(url)
    saver = AgentMemorySaver(client, name=_name(), registry=registry)
    raw = valkey.Valkey.from_url(url)
    try:
        parent, ids = None, []
        for step in range(3):
            config, cp, md, versions = _put(saver, "t", parent=parent, x=step)
            parent = await _call(saver, "put", config, cp, md, versions)
            ids.append(cp["id"])
        newest = ids[-1]
        lane = Layout(saver.name).lane("t", "")
        # an id with a record (a copy of the newest's fields), one with none, both newest
        for field, value in raw.hgetall(lane.records).items():
            if field.endswith(newest.encode()):
                raw.hset(lane.records, field[:2] + NOT_UTF8, value)
        raw.zadd(lane.ids, {NOT_UTF8: 0, NOT_UTF8 + b"-no-record": 0})
        raw.hset(lane.namespaces, b"\xfe-ns", b"t")  # a namespace entry, not UTF-8

        async def listed(config: Any, **kwargs: Any) -> list[str]:
            found = await _call(saver, "list", config, **kwargs)
            return [t.checkpoint["id"] for t in found]

        thread = generate_config("t")
        with caplog.at_level(logging.WARNING):
            assert await listed(thread) == ids[::-1]
            # the id with a record is damaged; the one without is gone: dropped from
            # the ids by that read, counted as a ghost entry
            assert saver.skipped == 1
            assert await listed(thread, limit=1) == [newest]  # pages of 1 past it
            assert saver.skipped == 2
            assert await listed({"configurable": {"thread_id": "t"}}) == ids[::-1]
            assert saver.skipped == 4  # the namespace entry too
            assert await listed(thread, filter={"source": "loop"}) == ids[::-1]
            assert saver.skipped == 5
            latest = await _call(saver, "get_tuple", thread)
            assert latest is not None and latest.checkpoint["id"] == newest
            assert saver.skipped == 6
        assert "checkpoint id is not valid UTF-8" in caplog.text
        assert "namespace entry" in caplog.text
        events = {"name": saver.name, "event": "corrupt_records"}
        assert registry.get_sample_value("agent_memory_events_total", events) == 6
        ghosts = {"name": saver.name, "event": "ghost_entries"}
        assert registry.get_sample_value("agent_memory_events_total", ghosts) == 1
        # the thread can still be copied and deleted (the foreign entry is left alone)
        await _call(saver, "copy_thread", "t", "t2")
        assert await listed(generate_config("t2")) == ids[::-1]
        await _call(saver, "delete_thread", "t")
        assert await _call(saver, "get_tuple", thread) is None
    finally:
        raw.close()
        closer = getattr(client, "aclose", None) or client.close
        result = closer()
        if asyncio.iscoroutine(result):
            await result


def test_an_id_naming_no_record_does_not_end_the_lane(
    saver: AgentMemorySaver, servers: _Servers
) -> None:
    """Ids another writer left in a lane's ids without a record, sorting newest: the
    reads page past them (it used to end the page: ``get_tuple`` found nothing, ``list``
    with a limit returned nothing)."""
    import valkey

    ids = _history(saver, "t", 2)
    raw = valkey.Valkey.from_url(servers.get("valkey").url)
    lane = Layout(saver.name).lane("t", "")
    thread = generate_config("t")
    try:
        raw.zadd(lane.ids, {"~no-record": 0})
        latest = saver.get_tuple(thread)
        assert latest is not None and latest.checkpoint["id"] == ids[-1]
        raw.zadd(lane.ids, {"~no-record": 0})
        assert [t.checkpoint["id"] for t in saver.list(thread, limit=1)] == [ids[-1]]
        raw.zadd(lane.ids, {"~no-record": 0})
        found = saver.list(thread, filter={"step": 0})
        assert [t.checkpoint["id"] for t in found] == [ids[0]]
    finally:
        raw.close()
    assert saver.skipped == 0


# -- bounds --------------------------------------------------------------------------

TEN_YEARS = 10 * 365 * 24 * 60  # minutes


def test_ttl_is_bounded_at_ten_years_when_the_saver_is_built(servers: _Servers) -> None:
    import valkey

    url = servers.get("valkey").url
    client = valkey.Valkey.from_url(url)
    # beyond the server's expiry range, or only the last step of every put would fail
    for minutes in (math.inf, 1e300, 10**400, TEN_YEARS + 1):
        with pytest.raises(InvalidInputError, match="default_ttl") as caught:
            AgentMemorySaver(client, name=_name(), ttl={"default_ttl": minutes})
        assert caught.value.field == "ttl"
        with pytest.raises(InvalidInputError, match="default_ttl"):
            AgentMemorySaver.from_url(url, ttl={"default_ttl": minutes})
    client.close()
    with AgentMemorySaver.from_url(url, name=_name(), ttl={"default_ttl": TEN_YEARS}) as saver:
        saver.put(*_put(saver, "t", x=1))
        assert saver.get_tuple(generate_config("t")) is not None
        assert all(
            (TEN_YEARS - 1) * 60_000 < t <= TEN_YEARS * 60_000
            for t in _pttls(url, Layout(saver.name), "t")
        )
