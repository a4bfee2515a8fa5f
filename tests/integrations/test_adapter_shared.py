"""The framework-free cores the adapters share: memory tools, list logs, key helpers."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_memory import Scope
from agent_memory.cache._tier import TierCore
from agent_memory.cache.scripts import LIST_WITH_LIFETIME, POP_IF_TAIL
from agent_memory.core.effects import Batch, Operation, T
from agent_memory.errors import InvalidInputError, ReplyParseError
from agent_memory.integrations import _keys, _list_log, _memory_tools
from agent_memory.schema.types import Durability, MemoryItem

# --- memory tools -------------------------------------------------------------------


def test_strict_specs_require_every_property_and_explain_null() -> None:
    specs = _memory_tools.bound_specs(Scope(session_id="s"), ("recall", "save"), None, strict=True)
    save = _memory_tools.strict_schema(specs["save"])
    assert save["required"] == ["text", "importance", "durability"]
    assert "minLength" not in save["properties"]["text"]
    assert "null: 0.5" in save["properties"]["importance"]["description"]
    assert specs["save"].required == ("text",)


def test_plain_specs_keep_optional_arguments_optional() -> None:
    specs = _memory_tools.bound_specs(Scope(), "forget", {"forget": "drop"}, strict=False)
    assert list(specs) == ["forget"]
    schema = specs["forget"].input_schema()
    assert specs["forget"].name == "drop"
    assert schema["required"] == ["id"] and schema["properties"]["id"]["minLength"] == 1


def test_durability_is_offered_only_with_a_bound_session() -> None:
    plain = _memory_tools.spec("save", "save_memory", Scope(), strict=False)
    assert "durability" not in plain.properties


@pytest.mark.parametrize(
    ("include", "names", "field"),
    [
        (("recall", "summon"), None, "include"),
        (("recall",), {"summon": "x"}, "names"),
        (("recall",), {"recall": "bad name"}, "names"),
        (("recall",), {"recall": "x" * 65}, "names"),
        (("recall", "save"), {"recall": "same", "save": "same"}, "names"),
        (None, None, "include"),
        (5, None, "include"),
        (("recall",), 5, "names"),
        (("recall",), ["recall"], "names"),
    ],
)
def test_bound_specs_refuse_unknown_kinds_and_bad_names(
    include: Any, names: Any, field: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        _memory_tools.bound_specs(Scope(), include, names, strict=True)
    assert caught.value.field == field


def test_store_and_scope_checks_name_the_adapter() -> None:
    with pytest.raises(InvalidInputError, match="my_tools needs a MemoryStore"):
        _memory_tools.check_store_and_scope(object(), Scope(), owner="my_tools", loop_note="x")


def test_arguments_are_checked_and_bound_to_the_scope() -> None:
    scope = Scope(namespace="acme")
    specs = _memory_tools.bound_specs(scope, _memory_tools.KINDS, None, strict=False)
    recall = _memory_tools.recall_arguments(specs["recall"], scope, '{"query": "tea"}')
    assert recall == {"query": "tea", "k": 5, "scope": scope}
    with pytest.raises(InvalidInputError, match="not accepted"):
        _memory_tools.save_arguments(specs["save"], scope, {"text": "x", "namespace": "evil"})
    with pytest.raises(InvalidInputError, match="blank"):
        _memory_tools.forget_argument(specs["forget"], {"id": "  "})


def _item(scope: Scope, durability: Durability = "shared") -> MemoryItem:
    return MemoryItem(
        id="m1", content="x", importance=0.5, tags=(), scope=scope, created_at=0,
        last_accessed_at=0, access_count=0, durability=durability,
    )  # fmt: skip


def test_owns_follows_the_bound_scope() -> None:
    bound = Scope(namespace="acme", agent_id="a", session_id="s1")
    assert _memory_tools.owns(bound, _item(Scope(namespace="acme", agent_id="a")))
    assert not _memory_tools.owns(bound, _item(Scope(namespace="other", agent_id="a")))
    assert not _memory_tools.owns(bound, _item(Scope(namespace="acme", agent_id="b")))
    other_session = Scope(namespace="acme", agent_id="a", session_id="s2")
    assert not _memory_tools.owns(bound, _item(other_session, "session"))


def test_iso_time_is_utc() -> None:
    assert _memory_tools.iso_time(None) is None
    assert _memory_tools.iso_time(0) == "1970-01-01T00:00:00+00:00"


# --- list logs ----------------------------------------------------------------------


class FakeList:
    """Answers the list commands of one key, as a server would (counters ignored)."""

    def __init__(self, elements: list[Any]) -> None:
        self.elements = elements
        self.sent: list[tuple[Any, ...]] = []

    def reply(self, args: tuple[Any, ...]) -> Any:
        self.sent.append(args)
        name = args[0]
        if name == "LRANGE":
            start, stop = args[2], args[3]
            size = len(self.elements)
            first = max(size + start, 0) if start < 0 else start
            return self.elements[first : size + stop + 1 if stop < 0 else stop + 1]
        if name == "RPUSH":
            self.elements.extend(args[2:])
            return len(self.elements)
        if name == "RPOP":
            return self.elements.pop() if self.elements else None
        if name == "UNLINK":
            self.elements.clear()
            return 1
        if name == "EVAL" and args[1] == LIST_WITH_LIFETIME:  # the command, then PEXPIRE
            _, _, _, key, ttl, command, *rest = args
            reply = self.reply((command, key, *rest))
            self.sent.append(("PEXPIRE", key, ttl))
            return reply
        if name == "EVAL":  # POP_IF_TAIL: remove the expected tail if it is unchanged
            assert args[1] == POP_IF_TAIL
            expected = list(args[4:])
            if not expected or self.elements[-len(expected) :] != expected:
                return 0
            del self.elements[-len(expected) :]
            return 1
        return 1  # PEXPIRE, HINCRBY

    def run(self, op: Operation[T]) -> T:
        try:
            effect = next(op)
            while True:
                assert isinstance(effect, Batch)
                effect = op.send([self.reply(c.args) for c in effect.commands])
        except StopIteration as done:
            return done.value  # type: ignore[no-any-return]


def _decode(raw: object) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def _entries(*values: int) -> list[Any]:
    return [json.dumps({"n": n}) for n in values]


def test_read_latest_widens_past_corrupt_entries() -> None:
    log = FakeList([*_entries(1, 2), "junk", "junk", *_entries(3)])
    entries, skipped = log.run(_list_log.read_latest(TierCore("t"), "k", 2, None, _decode))
    assert entries == [{"n": 2}, {"n": 3}] and skipped == 2
    assert [args[2] for args in log.sent if args[0] == "LRANGE"] == [-2, -4]


def test_read_latest_all_none_and_ttl() -> None:
    log = FakeList([*_entries(1), "junk"])
    tier = TierCore("t")
    assert log.run(_list_log.read_latest(tier, "k", None, 500, _decode)) == ([{"n": 1}], 1)
    assert ("PEXPIRE", "k", 500) in log.sent
    assert log.run(_list_log.read_latest(tier, "k", 0, None, _decode)) == ([], 0)


def test_read_latest_any_limit_stays_within_the_server_indexes() -> None:
    for limit in (10**20, _list_log.WHOLE_LIST):  # a limit past 64 bits reads the whole list
        log = FakeList([*_entries(1, 2)])
        assert log.run(_list_log.read_latest(TierCore("t"), "k", limit, None, _decode)) == (
            [{"n": 1}, {"n": 2}],
            0,
        )
        assert [args[2] for args in log.sent if args[0] == "LRANGE"] == [0]
    big = _list_log.WHOLE_LIST // 2 + 1  # its first widening would pass the bound
    log = FakeList(["junk", *_entries(1)])
    entries, skipped = log.run(_list_log.read_latest(TierCore("t"), "k", big, None, _decode))
    assert entries == [{"n": 1}] and skipped == 1
    assert [args[2] for args in log.sent if args[0] == "LRANGE"] == [-big]


def test_append_pop_and_clear() -> None:
    log = FakeList([])
    tier = TierCore("t")
    log.run(_list_log.append(tier, "k", [*_entries(1), b"junk"], None))
    popped = log.run(_list_log.pop_latest(tier, "k", None, _decode))
    assert popped == ({"n": 1}, 1)  # the junk above it dropped, and counted
    assert log.run(_list_log.pop_latest(tier, "k", None, _decode)) == (None, 0)
    log.run(_list_log.append(tier, "k", _entries(2), None))
    log.run(_list_log.clear(tier, "k"))
    assert log.elements == []


def test_decode_entries_refuses_a_non_list_reply() -> None:
    with pytest.raises(ReplyParseError):
        _list_log.decode_entries(b"x", _decode)


# --- key helpers --------------------------------------------------------------------


def test_key_helpers() -> None:
    assert len(_keys.digest("thread", 16)) == 16
    assert _keys.digest_of_parts(["a", "b"]) != _keys.digest_of_parts(["a,b"])
    assert _keys.digest("\ud800", 8)  # a lone surrogate still has a digest
    assert _keys.check_name("app") == "app"
    with pytest.raises(InvalidInputError):
        _keys.check_name("a{b}")
