"""The in-process backend's Python twins behave as the Lua scripts the servers run.

Every script the library sends runs twice on generated inputs: as Lua on a real Valkey,
and as its twin on an in-process keyspace holding the same data. The replies and every
touched key (type, value, whether it has a TTL) must agree, so a change to a script that
its twin does not follow fails here.
"""

from __future__ import annotations

import json
import math
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import valkey
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_memory.backends.inprocess import InProcessClient, Keyspace
from agent_memory.backends.inprocess_scripts import _SCRIPT_TWINS
from agent_memory.cache import scripts as cache_scripts
from agent_memory.integrations.pydantic_ai.conversation_store import scripts as conversations
from agent_memory.schema import layout as L
from agent_memory.schema import lexical, scripts
from tests.conftest import ServerInfo, _Servers


@dataclass
class Scenario:
    """Keys (named by a letter, prefixed per run), their initial data, and one call."""

    source: str
    keys: list[str]
    argv: list[str]
    hashes: dict[str, dict[str, str]] = field(default_factory=dict)
    zsets: dict[str, dict[str, float]] = field(default_factory=dict)
    strings: dict[str, str] = field(default_factory=dict)
    sets: dict[str, list[str]] = field(default_factory=dict)
    lists: dict[str, list[str]] = field(default_factory=dict)
    #: more keys the call may touch (compared after it too)
    others: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def server(servers: _Servers) -> ServerInfo:
    return servers.get("valkey")


def _prefixed(sc: Scenario, prefix: str) -> Callable[[str], str]:
    return lambda name: f"{prefix}{name}"


def _fill(value: str, prefix: str) -> str:
    """``value`` with ``<p>`` (a key name stored or passed as a value) prefixed per run."""
    return value.replace("<p>", prefix)


def _setup(run: Callable[..., Any], sc: Scenario, p: Callable[[str], str]) -> None:
    for key, mapping in sc.hashes.items():
        if mapping:
            run("HSET", p(key), *[_fill(x, p("")) for kv in mapping.items() for x in kv])
    for key, members in sc.zsets.items():
        if members:
            run("ZADD", p(key), *[x for m, s in members.items() for x in (repr(s), m)])
    for key, value in sc.strings.items():
        run("SET", p(key), value)
    for key, members in sc.sets.items():
        if members:
            run("SADD", p(key), *members)
    for key, elements in sc.lists.items():
        if elements:
            run("RPUSH", p(key), *elements)


def _norm(value: Any) -> Any:
    if isinstance(value, bytes):
        value = value.decode()
    if isinstance(value, (list, tuple)):
        return [_norm(v) for v in value]
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return _json(value)
        return value if math.isnan(number) else number  # "1" and "1.0" agree
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _json(text: str) -> Any:
    """JSON documents compare by value: cjson and Python format numbers differently."""
    if not text.startswith(("{", "[")):
        return text
    try:
        return ("json", _norm(json.loads(text)))
    except ValueError:
        return text


def _state(run: Callable[..., Any], names: list[str], p: Callable[[str], str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in names:
        key = p(name)
        kind = _norm(run("TYPE", key))
        kind = kind if isinstance(kind, str) else str(kind)
        if kind == "none":
            continue
        if kind == "hash":
            raw = run("HGETALL", key)
            pairs = raw.items() if isinstance(raw, dict) else zip(raw[::2], raw[1::2], strict=True)
            value: Any = {_norm(k): _norm(v) for k, v in pairs}
        elif kind == "zset":
            raw = run("ZRANGE", key, 0, -1, "WITHSCORES")
            flat = (
                raw
                if raw and not isinstance(raw[0], (list, tuple))
                else [x for pr in raw for x in pr]
            )
            value = {_norm(flat[i]): _norm(flat[i + 1]) for i in range(0, len(flat), 2)}
        elif kind == "set":
            value = sorted(_norm(m) for m in run("SMEMBERS", key))
        elif kind == "list":
            value = [_norm(e) for e in run("LRANGE", key, 0, -1)]
        else:
            value = _norm(run("GET", key))
        out[name] = (kind, value, int(run("PTTL", key)) > 0)
    return out


def _call(run: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, bool]:
    try:
        return _norm(run(*args)), False
    except Exception:  # noqa: BLE001 - either side failing is compared, not its type
        return None, True


def _run_both(server: ServerInfo, sc: Scenario) -> Any:
    """Run ``sc`` as Lua and as its twin, compare, and return the Lua reply (``None``
    when the script failed)."""
    client = valkey.Valkey.from_url(server.url)
    keyspace = Keyspace()
    twin = InProcessClient(keyspace)
    prefix = f"twin{uuid.uuid4().hex[:10]}:"
    p = _prefixed(sc, prefix)
    names = sorted({*sc.keys, *sc.hashes, *sc.zsets, *sc.strings, *sc.sets, *sc.lists, *sc.others})
    try:
        _setup(client.execute_command, sc, p)
        _setup(twin.execute_command, sc, p)
        argv = [_fill(arg, prefix) for arg in sc.argv]
        args = ("EVAL", sc.source, str(len(sc.keys)), *map(p, sc.keys), *argv)
        lua, lua_error = _call(client.execute_command, args)
        python, python_error = _call(twin.execute_command, args)
        assert python_error == lua_error, (python, lua)
        if lua_error:
            return None  # a failed script keeps what it wrote before the error: not compared
        assert python == lua
        assert _state(twin.execute_command, names, p) == _state(client.execute_command, names, p)
        return lua
    finally:
        client.delete(*[p(n) for n in names])
        client.close()


IDS = st.sampled_from(["m1", "m2", "m3"])
SMALL = st.sampled_from(["0", "1", "2", "7", "0.5", "-1", "10"])
COUNT = st.sampled_from(["0", "1", "2", "7"])
WORDS = st.sampled_from(["content", "importance", "last_accessed_at", "access_count", "x"])
CONTEXTS = st.sampled_from([
    '{"c": [1, 1, 5]}', '{"a": [1, 1, 5], "b": [0, 1, 9]}', "{}",
    # learning data no writer makes: the apply script replaces what it cannot read
    "not json", "[]", "[[1, 1, 5]]", "7", '{"c": "x"}', '{"c": [1, null, 5], "a": [1, 1, 5]}',
    '{"c": [1, true, 5]}', '{"c": [1, 1]}',
])  # fmt: skip
AGGREGATE = st.sampled_from(["0", "0.5", "-1", "x", "", "nan", " 1"])
MEMORY = st.fixed_dictionaries(
    {"content": st.sampled_from(["a note", "", "ü"]), "importance": SMALL,
     "last_accessed_at": st.sampled_from(["0", "500", "1000"])},
    optional={"expires_at": st.sampled_from(["1300", "1301", "900", "junk", "1e9", ""]),"access_count": COUNT, "eval_sum": AGGREGATE, "eval_weight": AGGREGATE,
              "utility_ctx": CONTEXTS, "created_at": st.sampled_from(["7", "8"]),
              "namespace": st.just("ns"), "session": st.just("_s"), "agentId": st.just("a1")},
)  # fmt: skip


@st.composite
def memories(draw: Any) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    """Hashes for m1..m3 (some absent), and maybe one memory key holding a string."""
    hashes = {f"mem:{i}": draw(MEMORY) for i in draw(st.sets(IDS))}
    strings = {"mem:m3": "not a hash"} if draw(st.booleans()) and "mem:m3" not in hashes else {}
    return hashes, strings


@st.composite
def recall_effects(draw: Any) -> Scenario:
    hashes, strings = draw(memories())
    ids = draw(st.lists(IDS, max_size=3, unique=True))
    usage = draw(st.dictionaries(st.sampled_from(["x:m1", "a:m1", "a:m2"]), COUNT, max_size=3))
    fields = draw(st.lists(WORDS, min_size=1, max_size=3, unique=True))
    argv = ["1000", draw(st.sampled_from(["0", "1"])), draw(st.sampled_from(["1", "600"])),
            "recall_hits", '{"ids": []}', "60000", "sel", str(len(fields)), *fields, *ids]  # fmt: skip
    if not usage and draw(st.booleans()):  # another writer replaced the usage counters
        return Scenario(scripts.RECALL_EFFECTS, ["stats", "usage", "receipts", "receipt",
                        *(f"mem:{i}" for i in ids)], argv, hashes,
                        strings={**strings, "usage": "not a hash"})  # fmt: skip
    return Scenario(scripts.RECALL_EFFECTS, ["stats", "usage", "receipts", "receipt",
                    *(f"mem:{i}" for i in ids)], argv, {**hashes, "usage": usage}, strings=strings)  # fmt: skip


@st.composite
def write_memory(draw: Any) -> Scenario:
    hashes, _ = draw(memories())
    indexes = draw(st.lists(st.sampled_from(["agent", "thread"]), unique=True))
    terms = draw(st.dictionaries(st.sampled_from(["t:a", "t:b", "n", "len"]), COUNT, max_size=3))
    fields = draw(st.dictionaries(WORDS, st.sampled_from(["v", "1", "ü"]), min_size=1, max_size=3))
    argv = [draw(st.sampled_from(["0", "5000"])), "m1", draw(st.sampled_from(["+inf", "900"])),
            "100", draw(st.sampled_from(["0", "1"])), "tok",
            str(len(terms)), draw(st.sampled_from(["ns", "other"])),
            *[x for kv in terms.items() for x in kv],
            *[x for kv in fields.items() for x in kv]]  # fmt: skip
    keys = ["mem:m1", "registry", "bucket", "usage", "stats", "terms", "version", "epoch",
            "seq", "namespaces", *indexes]  # fmt: skip
    usage = {"x:m1": "3", "a:m1": "1"} if draw(st.booleans()) else {}
    strings = {"seq": "41"} if draw(st.booleans()) else {}
    listed = draw(st.sampled_from(["absent", "other", "same", "string"]))
    if listed == "string":  # another writer replaced the namespace set by a string
        strings["namespaces"] = "not a set"
    sets = {"namespaces": {"absent": [], "other": ["x"], "same": ["ns", "x"]}.get(listed, [])}
    return Scenario(scripts.WRITE_MEMORY, keys, argv, {**hashes, "usage": usage},
                    strings=strings, sets=sets)  # fmt: skip


@st.composite
def adopt_memory(draw: Any) -> Scenario:
    """A write of ``m1`` behind a guard that holds for what ``mem:m1`` holds, or not."""
    sc = draw(write_memory())
    if draw(st.booleans()):  # a foreign record: no session, maybe a string key instead
        sc.hashes["mem:m1"] = {k: v for k, v in draw(MEMORY).items() if k != "session"}
    if draw(st.booleans()):
        sc.hashes.pop("mem:m1", None)
        sc.strings["mem:m1"] = "not a hash"
    held = sc.hashes.get("mem:m1", {})
    names = draw(st.lists(st.sampled_from(["content", "session", "access_count"]), min_size=1,
                          max_size=3, unique=True))  # fmt: skip
    expected = [("=" + held[n]) if n in held else "" for n in names]
    if draw(st.booleans()):  # changed since it was read
        expected[0] = draw(st.sampled_from(["", "=a note", "=other"]))
    sc.source = scripts.ADOPT_MEMORY
    sc.argv = [str(len(names)), *names, *expected, *sc.argv]
    return sc


@st.composite
def forget_empty_namespace(draw: Any) -> Scenario:
    registry = draw(st.sampled_from(["absent", "zset", "string"]))
    zsets = {"registry": {"m1": 5.0}} if registry == "zset" else {}
    strings = {"registry": "x"} if registry == "string" else {}
    listed = draw(st.sampled_from(["absent", "with", "without", "string"]))
    if listed == "string":
        strings["namespaces"] = "not a set"
    sets = {"namespaces": {"with": ["ns", "b"], "without": ["b"]}.get(listed, [])}
    return Scenario(scripts.FORGET_EMPTY_NAMESPACE, ["registry", "namespaces"], ["ns"],
                    zsets=zsets, strings=strings, sets=sets)  # fmt: skip


@st.composite
def release_claim(draw: Any) -> Scenario:
    held = draw(st.sampled_from(["mine", "another's", "absent", "a hash"]))
    strings = (
        {"claim": {"mine": "tok", "another's": "tok2"}[held]}
        if held in ("mine", "another's")
        else {}
    )
    hashes = {"claim": {"f": "v"}} if held == "a hash" else {}
    return Scenario(scripts.DELETE_IF_HOLDS, ["claim"], ["tok"], hashes, strings=strings)


@st.composite
def single_memory(draw: Any) -> Scenario:
    state = draw(st.sampled_from(["memory", "memory", "memory", "absent", "string"]))
    hashes = {"mem:m1": draw(MEMORY)} if state == "memory" else {}
    strings = {"mem:m1": "not a hash"} if state == "string" else {}
    source, argv = draw(st.sampled_from([
        (scripts.TOUCH, ["1000", "300"]),
        (scripts.TOUCH, ["1000", "500"]),
        (scripts.UPDATE_IF_EXISTS, ["0", "importance", "0.9"]),
        (scripts.UPDATE_IF_EXISTS, ["4000", "content", "new"]),
        (scripts.UPDATE_GUARDED, ["0", "0", "0", "m1", "1", "content", "=", "0", "content", "new"]),
        (scripts.UPDATE_GUARDED, ["4000", "0", "0", "m1", "1", "content", "=a note", "0", "content", "new",
                                  "importance", "1"]),
        (scripts.UPDATE_GUARDED, ["0", "0", "0", "m1", "1", "content", "=ü", "0", "content", "new"]),
        (scripts.UPDATE_GUARDED, ["0", "0", "0", "m1", "2", "namespace", "agentId", "=ns", "", "0",
                                  "importance", "1"]),
        (scripts.UPDATE_GUARDED, ["4000", "0", "0", "m1", "1", "seq", "", "0"]),
        (scripts.UPDATE_GUARDED, ["0", "0", "0", "m1", "0", "0", "importance", "1"]),
        (scripts.REFRESH_DUPLICATE, ["1200", "0.9", "", "0", "1", "", "m1", "t"]),
        (scripts.REFRESH_DUPLICATE, ["1200", "0.9", "5000", "3800", "3", "", "m1", "t"]),
        (scripts.REFRESH_DUPLICATE, ["1200", "0.1", "1250", "50", "1", "", "m1", "t"]),
        (scripts.REFRESH_DUPLICATE, ["1200", "0.9", "", "0", "1", "=4", "m1", "t"]),
        (scripts.FEEDBACK, ["set", "0.5", "1300"]),
        (scripts.FEEDBACK, ["clear", "0", "1300"]),
        (scripts.DELETE_MEMORY, []),
        (scripts.DELETE_IF_UNCHANGED, ["2", "content", "importance", "=a note", "=1"]),
        (scripts.DELETE_IF_UNCHANGED, ["2", "content", "access_count", "=", ""]),
        (scripts.DELETE_IF_UNCHANGED, ["1", "content", "=ü"]),
        (scripts.DELETE_IF_UNCHANGED, ["2", "namespace", "session", "=ns", "=_s"]),
        (scripts.WRITE_WITH_TTL, ["5000", "content", "x", "importance", "1"]),
        (scripts.APPLY_EVAL, ["0.25", "0.5", "c", "1400", "2", "1"]),
        (scripts.APPLY_EVAL, ["0.25", "0.5", "c", "1400", "1", "1"]),
        (scripts.APPLY_EVAL, ["1", "1", "a", "1400", "2", "0"]),
        (scripts.APPLY_EVAL, ["-0.25", "0.5", "", "1400", "8", "0"]),
        (scripts.APPLY_EVAL, ["0.25", "0.5", "c", "1400", "2", "1", "7"]),
        (scripts.APPLY_EVAL, ["0.25", "0.5", "", "1400", "2", "1", ""]),
    ]))  # fmt: skip
    return Scenario(source, ["mem:m1"], argv, hashes, strings=strings)


@st.composite
def many(draw: Any) -> Scenario:
    hashes, strings = draw(memories())
    kind = draw(
        st.sampled_from(
            [
                "hmget",
                "complete",
                "stats",
                "counted",
                "publish",
                "text",
                "unregister",
                "unregister_expired",
            ]
        )
    )
    if kind == "unregister_expired":
        scores = st.sampled_from([900.0, 1000.0, 1001.0, math.inf])
        listed = draw(st.dictionaries(st.sampled_from(["m1", "m2", "m3", "m4"]), scores))
        broken = {"reg": "not a set"} if not listed and draw(st.booleans()) else {}
        checked = draw(st.integers(min_value=0, max_value=3))  # a cluster passes none
        now = draw(st.sampled_from(["1000", "1000.5", "-inf", "inf"]))
        return Scenario(scripts.UNREGISTER_EXPIRED, ["reg", *[f"mem:m{i}" for i in range(1, checked + 1)]],
                        [now, "m1", "m2", "m3", "m4"][: 2 + checked + draw(st.integers(0, 1))],
                        hashes, zsets={"reg": listed} if listed else {},
                        strings={**strings, **broken})  # fmt: skip
    if kind == "unregister":
        usage = draw(st.sampled_from([{"usage": {"x:m1": "2", "a:m2": "1"}}, {}]))
        listed = draw(st.sampled_from([{"set": {"m1": 1.0, "m2": 2.0}}, {}]))
        broken = {"set": "not a set"} if not listed and draw(st.booleans()) else {}
        # whose memories were deleted, and what keeps an id stored again in the set
        owner = [draw(st.sampled_from(["ns", "other"])), draw(st.sampled_from(["", "a1"])),
                 "", draw(st.sampled_from(["", "_s"]))]  # fmt: skip
        kind = draw(st.sampled_from(["n", "a", "t", "b", "*"]))
        return Scenario(scripts.UNREGISTER, ["usage", "set", "mem:m1", "mem:m2", "mem:m3"],
                        ["1", "x:", "a:", *owner, kind, "m1", "m2", "m3"],
                        {**hashes, **usage}, zsets=listed, strings={**strings, **broken})  # fmt: skip
    if kind == "text":  # a guarded update: its terms traded, its listings re-scored
        expected = draw(st.sampled_from(["=a note", "=", "=ü", ""]))
        held = draw(st.sampled_from(["=ns", ""]))
        start = {"terms": {"t:a": "1", "n": "2"}} if draw(st.booleans()) else {}
        listed = draw(
            st.sampled_from(
                [
                    {},
                    {"reg": {"m1": math.inf, "m2": 1.0}},
                    {"reg": {"m2": 1.0}, "agent": {"m1": 900.0}},
                ]
            )
        )
        stats = draw(st.sampled_from([["terms"], []]))
        traded = ["2", "t:a", "-1", "t:b", "1"] if stats else ["0"]
        return Scenario(scripts.UPDATE_GUARDED, ["mem:m1", *stats, "reg", "agent"],
                        ["1500", "2", "1500", "m1", "2", "content", "namespace", expected, held,
                         *traded, "content", "b", "expires_at", "1500"],
                        {**hashes, **start}, zsets=listed, strings=strings)  # fmt: skip
    if kind == "hmget":
        fields = draw(st.lists(WORDS, min_size=1, max_size=3, unique=True))
        return Scenario(scripts.HMGET_MANY, ["mem:m1", "mem:m2", "mem:m3"], fields, hashes,
                        strings=strings)  # fmt: skip
    if kind == "complete":
        receipt = {"receipt": "x"} if draw(st.booleans()) else {}
        written = draw(st.sampled_from([[], ["7", "8"], ["", "7"]]))  # each memory's created_at
        return Scenario(scripts.COMPLETE, ["receipt", "mem:m1", "mem:m2"],
                        ["0.1", "0.5", "ctx", "1500", "8", "1", *written], hashes,
                        strings=receipt)  # fmt: skip
    if kind == "stats":
        delta = draw(
            st.lists(
                st.tuples(st.sampled_from(["t:a", "n", "len"]), st.sampled_from(["1", "-1", "-3"])),
                max_size=3,
            )
        )
        start = {"terms": {"t:a": "1", "n": "2"}} if draw(st.booleans()) else {}
        source = draw(st.sampled_from([lexical.ADJUST_STATS, lexical.REPLACE_STATS]))
        return Scenario(source, ["terms"], [x for kv in delta for x in kv], start)
    if kind == "counted":
        costs = (12, 12.7, -1.5, True, 0, 1e20, 10**15, 10**15 + 1, "7", None)
        entry = draw(st.sampled_from([{}, {"entry": "plain"}, {"entry": "[1]"}] + [
            {"entry": json.dumps({"costMicros": cost})} for cost in costs
        ] + [{"entry": json.dumps({"response": "r", "costMicros": cost})} for cost in costs]
        ))  # fmt: skip
        stats = draw(st.sampled_from([
            {}, {"stats": {"llm:hits": "lots"}}, {"stats": {"llm:misses": "x"}},
            {"stats": {"cost_saved_micros": str(2**63 - 5)}}, {"stats": {"llm:hits": "4"}},
        ]))  # fmt: skip
        if draw(st.booleans()):  # the stats key replaced by another type
            entry, stats = {**entry, "stats": "a string"}, {}
        if draw(st.booleans()) and "stats" not in entry:  # the entry's key: another type
            entry, stats = {}, {**stats, "entry": {"response": "r"}}
        priced = draw(st.sampled_from(["1", "0"]))
        return Scenario(cache_scripts.COUNTED_GET, ["entry", "stats"],
                        ["1", priced, "llm:hits", "llm:misses"], stats, strings=entry)  # fmt: skip
    preset = draw(st.sampled_from([
        {}, {"config": {"recall.threshold": "0.4"}},
        {"config": {"recall.threshold": "0.4", "maxItemsPerScope": "9"}},
        {"config": {"agent_memory.published": '{"x": "1"}'}},
        {"config": {"agent_memory.published": "[1]"}},
    ]))  # fmt: skip
    return Scenario(scripts.PUBLISH, ["config"],
                    ["agent_memory.published", "recall.threshold", "0.65", "maxItemsPerScope", "5"],
                    preset)  # fmt: skip


def test_every_script_has_a_scenario() -> None:
    covered = {
        scripts.RECALL_EFFECTS, scripts.WRITE_MEMORY, scripts.ADOPT_MEMORY, scripts.TOUCH, scripts.UPDATE_IF_EXISTS,
        scripts.UPDATE_GUARDED, scripts.UNREGISTER, scripts.UNREGISTER_EXPIRED,
        scripts.REFRESH_DUPLICATE, scripts.FEEDBACK, scripts.DELETE_MEMORY,
        scripts.DELETE_IF_UNCHANGED,
        scripts.WRITE_WITH_TTL, scripts.APPLY_EVAL, scripts.HMGET_MANY, scripts.COMPLETE,
        lexical.ADJUST_STATS, lexical.REPLACE_STATS, cache_scripts.COUNTED_GET,
        scripts.PUBLISH, scripts.FORGET_EMPTY_NAMESPACE, scripts.DELETE_IF_HOLDS,
        cache_scripts.POP_IF_TAIL, cache_scripts.REFRESH_THREAD, cache_scripts.LIST_WITH_LIFETIME,
        cache_scripts.DESTROY_THREAD,
        # registered by the pydantic-ai conversation store (imported above)
        conversations.WRITE, conversations.DELETE, conversations.CHAIN, conversations.ENTRY,
        conversations.RECORDS,
    }  # fmt: skip
    assert set(_SCRIPT_TWINS) == covered
    assert L.F_SEQ == "seq"  # the write script's field, checked by write_memory scenarios


SETTINGS = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(recall_effects())
def test_recall_effects_twin(server: ServerInfo, sc: Scenario) -> None:
    _run_both(server, sc)


@SETTINGS
@given(write_memory())
def test_write_memory_twin(server: ServerInfo, sc: Scenario) -> None:
    _run_both(server, sc)


@SETTINGS
@given(adopt_memory())
def test_adopt_memory_twin(server: ServerInfo, sc: Scenario) -> None:
    _run_both(server, sc)


@SETTINGS
@given(forget_empty_namespace())
def test_forget_empty_namespace_twin(server: ServerInfo, sc: Scenario) -> None:
    _run_both(server, sc)


@settings(max_examples=20, deadline=None)
@given(release_claim())
def test_release_claim_twin(server: ServerInfo, sc: Scenario) -> None:
    _run_both(server, sc)


@SETTINGS
@given(single_memory())
def test_single_memory_twins(server: ServerInfo, sc: Scenario) -> None:
    _run_both(server, sc)


@SETTINGS
@given(many())
def test_other_twins(server: ServerInfo, sc: Scenario) -> None:
    _run_both(server, sc)


ELEMENTS = st.sampled_from(["a", "b", "{}", "ü", ""])


@st.composite
def pop_if_tail(draw: Any) -> Scenario:
    """A list (or a string in its place) and an expected tail that may or may not be
    its end."""
    elements = draw(st.lists(ELEMENTS, max_size=5))
    if elements and draw(st.booleans()):
        expected = elements[-draw(st.integers(1, len(elements))) :]  # its real tail
    else:
        expected = draw(st.lists(ELEMENTS, max_size=3))
    strings = {"log": "a string"} if not elements and draw(st.booleans()) else {}
    return Scenario(cache_scripts.POP_IF_TAIL, ["log"], expected, lists={"log": elements},
                    strings=strings)  # fmt: skip


@SETTINGS
@given(pop_if_tail())
def test_pop_if_tail_twin(server: ServerInfo, sc: Scenario) -> None:
    _run_both(server, sc)


@pytest.mark.parametrize("held", ["a hash", "a string", "a list", "absent"])
@pytest.mark.parametrize("ttl", ["5000", ""])
def test_refresh_thread_twin(server: ServerInfo, held: str, ttl: str) -> None:
    """A thread's hash gets the TTL; a key of another type keeps its own (none)."""
    sc = Scenario(cache_scripts.REFRESH_THREAD, ["thread"], [ttl],
                  hashes={"thread": {"k": "1"}} if held == "a hash" else {},
                  strings={"thread": "x"} if held == "a string" else {},
                  lists={"thread": ["x"]} if held == "a list" else {})  # fmt: skip
    assert _run_both(server, sc) == {"a hash": 1, "absent": 0}.get(held, -1)


@pytest.mark.parametrize("held", ["a hash", "an empty-ish hash", "a string", "a list", "absent"])
def test_destroy_thread_twin(server: ServerInfo, held: str) -> None:
    """A thread's hash is deleted and its fields counted; a key of another type is
    deleted too (-1)."""
    fields = {"a hash": {"k": "1", "j": "{}", "i": ""}, "an empty-ish hash": {"k": ""}}
    sc = Scenario(cache_scripts.DESTROY_THREAD, ["thread"], [],
                  hashes={"thread": fields[held]} if held in fields else {},
                  strings={"thread": "x"} if held == "a string" else {},
                  lists={"thread": ["x"]} if held == "a list" else {})  # fmt: skip
    assert _run_both(server, sc) == {"a hash": 3, "an empty-ish hash": 1, "absent": 0}.get(held, -1)


@st.composite
def list_with_lifetime(draw: Any) -> Scenario:
    """A list (or a string in its place, another client's) and one list command of a
    session log with its lifetime."""
    elements = draw(st.lists(ELEMENTS, max_size=5))
    command = draw(st.sampled_from([
        ["LRANGE", str(draw(st.integers(-6, 2))), "-1"], ["LRANGE", "0", "-1"],
        ["RPUSH", *draw(st.lists(ELEMENTS, min_size=1, max_size=3))], ["RPOP"],
    ]))  # fmt: skip
    strings = {"log": "a string"} if not elements and draw(st.booleans()) else {}
    return Scenario(cache_scripts.LIST_WITH_LIFETIME, ["log"], ["60000", *command],
                    lists={"log": elements}, strings=strings)  # fmt: skip


@SETTINGS
@given(list_with_lifetime())
def test_list_with_lifetime_twin(server: ServerInfo, sc: Scenario) -> None:
    _run_both(server, sc)


@st.composite
def zset_with_lifetime(draw: Any) -> Scenario:
    """A sorted set (or a list in its place, another client's) and one command of the
    LlamaIndex DB chat store with its lifetime."""
    members = draw(
        st.dictionaries(
            st.sampled_from(["1:a", "2:b", "3:ü"]),
            st.sampled_from([-2.0, -1.0, 1.0, 3.0]),
            max_size=3,
        )
    )
    # (the in-process keyspace has no ZRANGE ... BYSCORE: its backend does not serve
    # the DB chat store, whose scripts have no twins)
    command = draw(st.sampled_from([
        ["ZRANGE", "0", "-1"], ["ZCOUNT", "(0", "+inf"], ["ZCOUNT", "-inf", "(0"], ["ZCARD"],
        ["ZREMRANGEBYSCORE", "-inf", "(0"],
    ]))  # fmt: skip
    lists = {"chat": ["x"]} if not members and draw(st.booleans()) else {}
    return Scenario(cache_scripts.LIST_WITH_LIFETIME, ["chat"], ["60000", *command],
                    zsets={"chat": members}, lists=lists)  # fmt: skip


@SETTINGS
@given(zset_with_lifetime())
def test_list_with_lifetime_twin_on_sorted_sets(server: ServerInfo, sc: Scenario) -> None:
    _run_both(server, sc)


_COSTS = (12, 12.7, -1.5, True, 0, 1e20, 10**15, 10**15 + 1, "7", None)


@pytest.mark.parametrize(
    ("entry", "stats", "priced"),
    [({"entry": json.dumps({"response": "r", "costMicros": c})}, {}, "1") for c in _COSTS]
    + [
        ({"entry": json.dumps({"response": "r", "costMicros": 9})}, {"stats": damage}, "1")
        for damage in (
            {"llm:hits": "lots"},
            {"cost_saved_micros": str(2**63 - 5)},
            {"cost_saved_micros": "x", "llm:hits": "1"},
        )
    ]
    + [({"entry": json.dumps({"response": "r", "costMicros": 9})}, {}, "0")]
    + [({}, {"stats": {"llm:misses": "x"}}, "1")]
    + [({"entry": "[1]", "stats": "a string"}, {}, "1")],
)
def test_counted_get_twin(
    server: ServerInfo, entry: dict[str, str], stats: dict[str, dict[str, str]], priced: str
) -> None:
    """Every reading of an entry's cost and every counter the server refuses, each once."""
    sc = Scenario(
        cache_scripts.COUNTED_GET, ["entry", "stats"], ["1", priced, "llm:hits", "llm:misses"],
        stats, strings=entry,
    )  # fmt: skip
    _run_both(server, sc)


@pytest.mark.parametrize("stats", [{}, {"stats": {"llm:misses": "x"}}])
def test_counted_get_reads_an_entry_of_another_type_as_a_marked_miss(
    server: ServerInfo, stats: dict[str, dict[str, str]]
) -> None:
    """The entry's key holding a hash: no error, a miss counted, marked -1 (the caller
    reports the entry as unreadable)."""
    sc = Scenario(
        cache_scripts.COUNTED_GET, ["entry", "stats"], ["1", "1", "llm:hits", "llm:misses"],
        {**stats, "entry": {"response": "r"}},
    )  # fmt: skip
    reply = _run_both(server, sc)
    failed = ["llm:misses"] if stats else []
    assert reply == [None, -1, 0, *failed]


# Numbers other writers may leave where a script reads one: Lua's tonumber takes
# hexadecimal, spaces around, "inf" and "1."; the server's integers take none of
# "+5", " 5", "1_0", "-0", "007" or Unicode digits. ("1e400" in eval_sum stays out: the
# server adds to it as a long double, which Python has not.)
DAMAGED = ["1e-7", "999.5", "inf", "-inf", "nan", "99999999999999999999", "", " 5", "5 ",
           "0x10", "1_0", "\u0661\u0662", "-0", "+5", "007", "1000.", ".5", "infinity", "1e3",
           "9223372036854775808"]  # fmt: skip


@st.composite
def refreshed_duplicate(draw: Any) -> Scenario:
    """A duplicate refreshed by a search that read its ``seq`` (or read it absent) while
    it may have been rewritten since, its lifetime kept, extended or made persistent,
    its listings (standalone) re-scored in the same step."""
    memory = draw(MEMORY)
    held = draw(st.sampled_from([None, "4", "5"]))
    if held is not None:
        memory["seq"] = held
    read = draw(st.sampled_from(["", "=4", "=5"]))
    lifetime = draw(st.sampled_from([["", "0"], ["5000", "3800"], ["1250", "50"]]))
    state = draw(st.sampled_from(["memory", "memory", "absent", "string"]))
    hashes = {"mem:m1": memory} if state == "memory" else {}
    strings = {"mem:m1": "not a hash"} if state == "string" else {}
    zsets = {"reg": {"m1": 1300.0, "m2": 9.0}, "idx": {"m2": 9.0}}
    keys = ["mem:m1", *(["version", "reg", "idx"] if draw(st.booleans()) else [])]
    argv = ["1200", "0.9", *lifetime, "2", read, "m1", "tok"]
    return Scenario(scripts.REFRESH_DUPLICATE, keys, argv, hashes, zsets=zsets,
                    strings={**strings, "version": "old"}, others=["version", "reg", "idx"])  # fmt: skip


@SETTINGS
@given(refreshed_duplicate())
def test_refresh_duplicate_twin_guards_and_rescores(server: ServerInfo, sc: Scenario) -> None:
    """The refresh of a stored duplicate: nothing written once the memory's ``seq``
    differs from the one its search read; its listings re-scored and the registry
    version bumped in the same step when its lifetime changes."""
    _run_both(server, sc)


def _far(v: str) -> str:
    """``v`` as a TTL in ms that outlives the comparison: its first run of digits, when
    not zero, scaled by a million (the damage kept: spaces, signs, zeros, exponents). A
    key with a damaged TTL of 5 ms may expire on the server between the script and the
    read of its state, and not in the twin, which is read at once."""
    return re.sub(r"[0-9]+", lambda m: m[0] + "000000" if int(m[0]) else m[0], v, count=1)


def _damaged_scenarios(v: str) -> list[Scenario]:
    mem = {"content": "a", "importance": "0.5", "last_accessed_at": v}
    effects = ["stats", "usage", "receipts", "receipt", "mem:m1"]
    recall = ["1000", "1", "1", "recall_hits", "{}", "60000", "sel", "1", "content", "m1"]
    return [
        Scenario(scripts.TOUCH, ["mem:m1"], ["1001", "1"], {"mem:m1": mem}),
        Scenario(scripts.RECALL_EFFECTS, effects, recall, {"mem:m1": mem}),
        *(
            Scenario(scripts.RECALL_EFFECTS, effects, [recall[0], r, *recall[2:]],
                     {"mem:m1": {"content": "a"}, "usage": {"a:m1": v, "x:m1": "1"}})
            for r in ("0", "1")
        ),
        Scenario(scripts.RECALL_EFFECTS, effects, recall,
                 {"mem:m1": {"content": "a"}, "usage": {"x:m1": v}}),
        Scenario(scripts.REFRESH_DUPLICATE, ["mem:m1"], ["1200", "0.5", "", "0", "1", "", "m1", "t"],
                 {"mem:m1": {"content": "a", "importance": v}}),
        Scenario(scripts.REFRESH_DUPLICATE, ["mem:m1"], ["1200", v, "", "0", "1", "", "m1", "t"],
                 {"mem:m1": {"content": "a", "importance": "0.5"}}),
        Scenario(scripts.REFRESH_DUPLICATE, ["mem:m1"], ["1200", "0.9", "", "0", "2", "", "m1", "t"],
                 {"mem:m1": {"content": "a", "importance": "0.5", "access_count": v}}),
        *(
            Scenario(scripts.REFRESH_DUPLICATE, ["mem:m1"], ["1200", "0.9", *lifetime, "1", "", "m1", "t"],
                     {"mem:m1": {"content": "a", "expires_at": v}})
            for lifetime in (["", "0"], ["5000", "3800"])
        ),
        Scenario(scripts.FEEDBACK, ["mem:m1"], ["set", v, "1300"], {"mem:m1": {"content": "a"}}),
        Scenario(scripts.APPLY_EVAL, ["mem:m1"], ["0.25", "0.5", "c", "1400", "2", "1"],
                 {"mem:m1": {"content": "a", "eval_sum": v, "eval_weight": v}}),
        Scenario(scripts.APPLY_EVAL, ["mem:m1"], [v, "0.5", "c", "1400", "2", "1"],
                 {"mem:m1": {"content": "a", "eval_sum": "1"}}),
        Scenario(scripts.UPDATE_IF_EXISTS, ["mem:m1"], [_far(v), "importance", "1"],
                 {"mem:m1": {"content": "a"}}),
        Scenario(scripts.UPDATE_GUARDED, ["mem:m1"],
                 [_far(v), "0", "0", "m1", "0", "0", "importance", "1"], {"mem:m1": {"content": "a"}}),
        Scenario(scripts.WRITE_WITH_TTL, ["mem:m1"], [_far(v), "importance", "1"]),
    ]  # fmt: skip


@pytest.mark.parametrize("value", DAMAGED)
def test_twins_read_damaged_numbers_as_the_server_does(server: ServerInfo, value: str) -> None:
    """Each script reading a number (stored or passed) another writer damaged: the same
    reply, state or failure as Lua on the server."""
    for sc in _damaged_scenarios(value):
        _run_both(server, sc)


# -- the pydantic-ai conversation store's scripts ----------------------------------------
# A catalog: records rec:<c>, the updated index, scope indexes, the entry graph (links:
# entry -> parent, refs: entry -> references). The drawn graphs include what no writer of
# this library leaves: links that loop or name a missing parent, counts that are off or
# not numbers, keys of another type.

CATALOG = ["rec:c1", "rec:c2", "updated", "scope:a", "scope:b", "links", "refs"]
ENTRY_IDS = ["e1", "e2", "e3", "e4", "e5"]
PARENTS = st.sampled_from(["", *ENTRY_IDS, "nowhere"])


@st.composite
def catalogs(
    draw: Any,
) -> tuple[dict[str, dict[str, str]], dict[str, dict[str, float]], dict[str, str]]:
    """The hashes, sorted sets and strings of a catalog holding maybe a record ``c1``."""
    links = draw(st.dictionaries(st.sampled_from(ENTRY_IDS[:4]), PARENTS, max_size=4))
    counts = st.sampled_from(["1", "1", "2", "0", "-1", "x"] if draw(st.booleans()) else ["1", "2"])
    refs = {entry: draw(counts) for entry in links if draw(st.integers(0, 4))}
    hashes: dict[str, dict[str, str]] = {"links": links, "refs": refs}
    zsets: dict[str, dict[str, float]] = {}
    if draw(st.booleans()):
        tips = draw(st.lists(st.sampled_from(ENTRY_IDS), max_size=3, unique=True))
        record = {"record": '{"r": 1}', "revision": "r1", "tips": "\n".join(tips),
                  "updated": "5"}  # fmt: skip
        scope = draw(st.sampled_from([None, "a", "b"]))
        if scope is not None:
            record["scope_index"] = f"<p>scope:{scope}"
            zsets[f"scope:{scope}"] = {"c1": 5.0}
        hashes["rec:c1"] = record
        zsets["updated"] = {"c1": 5.0}
    strings = {}
    if draw(st.integers(0, 5)) == 0:  # a catalog key replaced by another type
        damaged = draw(st.sampled_from(CATALOG))
        hashes.pop(damaged, None)
        zsets.pop(damaged, None)
        strings[damaged] = "a string"
    return hashes, zsets, strings


@st.composite
def conversation_write(draw: Any) -> Scenario:
    hashes, zsets, strings = draw(catalogs())
    cid = draw(st.sampled_from(["c1", "c2"]))
    expects, expected = draw(st.sampled_from([("0", ""), ("1", "r1"), ("1", "r9")]))
    scoped = draw(st.sampled_from([("0", "updated"), ("1", "scope:a"), ("1", "scope:b")]))
    new: list[tuple[str, str]] = []
    for _ in range(draw(st.integers(0, 3))):  # parents mostly earlier new entries
        earlier = st.sampled_from(["", *(entry for entry, _ in new)])
        new.append((draw(st.sampled_from([*ENTRY_IDS, "e6"])), draw(earlier | PARENTS)))
    branches = st.sampled_from([*ENTRY_IDS, "e6", "nowhere"])
    head = draw(st.sampled_from(["", *(entry for entry, _ in new)]) | branches)
    tips = list(dict.fromkeys([head, *draw(st.lists(branches, max_size=2))]))  # head first
    tips = [tip for tip in tips if tip]
    argv = [cid, expects, expected, "r2", '{"r": 2}', "7", scoped[0], head, "\n".join(tips),
            str(len(new)), *[x for pair in new for x in pair]]  # fmt: skip
    keys = [f"rec:{cid}", "updated", scoped[1], "links", "refs"]
    return Scenario(conversations.WRITE, keys, argv, hashes, zsets, strings, others=CATALOG)


@st.composite
def conversation_delete(draw: Any) -> Scenario:
    hashes, zsets, strings = draw(catalogs())
    cid = draw(st.sampled_from(["c1", "c1", "c2"]))
    revision = draw(st.sampled_from(["r1", "r1", "r9"]))
    return Scenario(conversations.DELETE, [f"rec:{cid}", "updated", "links", "refs"],
                    [cid, revision], hashes, zsets, strings, others=CATALOG)  # fmt: skip


@st.composite
def conversation_chain(draw: Any) -> Scenario:
    hashes, zsets, strings = draw(catalogs())
    head = draw(st.sampled_from(["", *ENTRY_IDS]))
    count = draw(st.sampled_from(["-1", "-1", "0", "1", "2", "5"]))
    return Scenario(conversations.CHAIN, ["links"], [head, count], hashes, zsets, strings)


@st.composite
def conversation_entry(draw: Any) -> Scenario:
    stored = draw(st.sampled_from([
        {}, {"message": "m", "kind": "message"}, {"message": "m", "kind": "message", "parent": "e1"},
        {"message": "other", "kind": "message"}, {"message": "m", "kind": "newer"},
        {"kind": "message"}, {"parent": "e1"},
    ]))  # fmt: skip
    strings = {"entry": "a string"} if not stored and draw(st.booleans()) else {}
    argv = ["m", "message", draw(st.sampled_from(["", "e1", "e2"]))]
    return Scenario(conversations.ENTRY, ["entry"], argv, {"entry": stored}, strings=strings)


@st.composite
def conversation_records(draw: Any) -> Scenario:
    """An index naming records that are stored, gone, of another type or damaged."""
    members = draw(st.lists(st.sampled_from(["c1", "c2", "c3", "c4"]), min_size=1, unique=True))
    index = draw(st.sampled_from(["updated", "scope:a"]))
    hashes = {"rec:c1": {"record": '{"r": 1}', "revision": "r1"},
              "rec:c4": {"revision": "r1"}}  # fmt: skip
    zsets = {index: {m: float(i) for i, m in enumerate(members)}}
    strings = {"rec:c3": "a string"}
    if draw(st.integers(0, 5)) == 0:
        zsets, strings = {}, {**strings, index: "a string"}
    last = draw(st.sampled_from(["-1", "0", "1", "2"]))
    return Scenario(conversations.RECORDS, [index], ["<p>rec:", last], hashes, zsets, strings,
                    others=["rec:c2"])  # fmt: skip


@SETTINGS
@given(conversation_write())
def test_conversation_write_twin(server: ServerInfo, sc: Scenario) -> None:
    _run_both(server, sc)


@SETTINGS
@given(st.one_of(conversation_delete(), conversation_chain()))
def test_conversation_delete_and_chain_twins(server: ServerInfo, sc: Scenario) -> None:
    _run_both(server, sc)


@settings(max_examples=50, deadline=None)
@given(st.one_of(conversation_entry(), conversation_records()))
def test_conversation_entry_and_records_twins(server: ServerInfo, sc: Scenario) -> None:
    _run_both(server, sc)


def _write(cid: str, expected: str | None, head: str, tips: list[str],
           new: list[tuple[str, str]], scope: str | None = None) -> tuple[list[str], list[str]]:  # fmt: skip
    """The KEYS and ARGV of a WRITE as :func:`~.conversation_store.scripts.write_call`
    makes them."""
    keys = [f"rec:{cid}", "updated", "updated" if scope is None else f"scope:{scope}",
            "links", "refs"]  # fmt: skip
    argv = [cid, "0" if expected is None else "1", expected or "", "r2", '{"r": 2}', "7",
            "0" if scope is None else "1", head, "\n".join(tips), str(len(new)),
            *[x for pair in new for x in pair]]  # fmt: skip
    return keys, argv


CHAIN3 = {"links": {"e1": "", "e2": "e1", "e3": "e2"}, "refs": {"e1": "1", "e2": "1", "e3": "1"}}
C1 = {"record": '{"r": 1}', "revision": "r1", "tips": "e3", "updated": "5",
      "scope_index": "<p>scope:a"}  # fmt: skip


@pytest.mark.parametrize(
    ("case", "write", "hashes", "reply"),
    [
        ("first save", _write("c1", None, "e2", ["e2"], [("e1", ""), ("e2", "e1")]), {}, [1]),
        ("append", _write("c1", "r1", "e4", ["e4"], [("e4", "e3")]), {**CHAIN3, "rec:c1": C1},
         [1]),
        ("stale revision", _write("c1", "r9", "e4", ["e4"], [("e4", "e3")]),
         {**CHAIN3, "rec:c1": C1}, [0, "e4"]),
        ("exists already", _write("c1", None, "e4", ["e4"], [("e4", "e3")]),
         {**CHAIN3, "rec:c1": C1}, [0, "e4"]),
        ("head unknown", _write("c2", None, "zz", ["zz"], [("e4", "e3")]), CHAIN3, [0, "e4"]),
        ("parent not stored", _write("c2", None, "e5", ["e5"], [("e4", "nowhere"), ("e5", "e4")]),
         CHAIN3, [2, "e4", "nowhere", "e4", "e5"]),
        ("parent a later new entry", _write("c2", None, "e4", ["e4"], [("e4", "e5"), ("e5", "")]),
         CHAIN3, [2, "e4", "e5", "e4", "e5"]),
        ("reused id", _write("c2", None, "e4", ["e4"], [("e2", ""), ("e4", "e2")]), CHAIN3, [1]),
        ("new entries no tip reaches", _write("c2", None, "e1", ["e1"], [("e4", "e3")]), CHAIN3,
         [1, "e4"]),
        ("a tip moved back releases what only it held", _write("c1", "r1", "e2", ["e2"], []),
         {**CHAIN3, "rec:c1": C1}, [1, "e3"]),
        ("scope moves", _write("c1", "r1", "e3", ["e3"], [], scope="b"), {**CHAIN3, "rec:c1": C1},
         [1]),
        ("damaged count", _write("c1", "r1", "e4", ["e4"], [("e4", "e3")]),
         {**CHAIN3, "refs": {"e3": "x"}, "rec:c1": C1}, None),
    ],
)  # fmt: skip
def test_conversation_write_twin_cases(
    server: ServerInfo, case: str, write: tuple[list[str], list[str]],
    hashes: dict[str, dict[str, str]], reply: list[Any] | None,
) -> None:  # fmt: skip
    """Each outcome of a write, the refusals and damage included, once."""
    zsets = {"updated": {"c1": 5.0}, "scope:a": {"c1": 5.0}} if "rec:c1" in hashes else {}
    sc = Scenario(conversations.WRITE, write[0], write[1], hashes, zsets, others=CATALOG)
    assert _run_both(server, sc) == _norm(reply), case


@pytest.mark.parametrize(
    ("case", "source", "keys", "argv", "hashes", "reply"),
    [
        ("delete releases the chain", conversations.DELETE,
         ["rec:c1", "updated", "links", "refs"], ["c1", "r1"], {**CHAIN3, "rec:c1": C1},
         [1, "e3", "e2", "e1"]),
        ("delete keeps what a fork holds", conversations.DELETE,
         ["rec:c1", "updated", "links", "refs"], ["c1", "r1"],
         {**CHAIN3, "refs": {"e1": "1", "e2": "2", "e3": "1"}, "rec:c1": C1}, [1, "e3"]),
        ("delete of another revision", conversations.DELETE,
         ["rec:c1", "updated", "links", "refs"], ["c1", "r9"], {**CHAIN3, "rec:c1": C1}, [0]),
        ("walk", conversations.CHAIN, ["links"], ["e3", "-1"], CHAIN3,
         [1, "e3", "e2", "e2", "e1", "e1", ""]),
        ("window", conversations.CHAIN, ["links"], ["e3", "1"], CHAIN3, [1, "e3", "e2"]),
        ("an entry gone", conversations.CHAIN, ["links"], ["e3", "-1"],
         {"links": {"e3": "e2", "e2": "e1"}}, [0, "e1"]),
        ("a loop", conversations.CHAIN, ["links"], ["e3", "-1"],
         {"links": {"e1": "e3", "e2": "e1", "e3": "e2"}}, [2, "e3"]),
        ("its own parent", conversations.CHAIN, ["links"], ["e1", "-1"], {"links": {"e1": "e1"}},
         [2, "e1"]),
        ("a new message", conversations.ENTRY, ["entry"], ["m", "message", "e1"], {}, 1),
        ("the same message again", conversations.ENTRY, ["entry"], ["m", "message", "e1"],
         {"entry": {"message": "m", "kind": "message", "parent": "e1"}}, 2),
        ("a reused id", conversations.ENTRY, ["entry"], ["m", "message", "e1"],
         {"entry": {"message": "other", "kind": "message", "parent": "e1"}}, 0),
        ("a reused id, another parent", conversations.ENTRY, ["entry"], ["m", "message", ""],
         {"entry": {"message": "m", "kind": "message", "parent": "e1"}}, 0),
        # c2 is gone (dropped from the index), c4 has no record field (kept, damaged)
        ("listing", conversations.RECORDS, ["updated"], ["<p>rec:", "-1"],
         {"rec:c1": {"record": '{"r": 1}'}, "rec:c4": {"revision": "r1"}},
         ["c4", "", "c2", None, "c1", '{"r": 1}']),
    ],
)  # fmt: skip
def test_conversation_twin_cases(
    server: ServerInfo, case: str, source: str, keys: list[str], argv: list[str],
    hashes: dict[str, dict[str, str]], reply: Any,
) -> None:  # fmt: skip
    """Deletes, history walks (a loop, a missing entry), message writes (a reused id)
    and a listing (a gone record leaves the index, a damaged one stays), once each."""
    zsets = (
        {"updated": {"c1": 1.0, "c2": 2.0, "c4": 3.0}} if source == conversations.RECORDS else {}
    )
    if "rec:c1" in hashes and source == conversations.DELETE:
        zsets = {"updated": {"c1": 5.0}, "scope:a": {"c1": 5.0}}
    sc = Scenario(source, keys, argv, hashes, zsets, others=CATALOG)
    assert _run_both(server, sc) == _norm(reply), case
