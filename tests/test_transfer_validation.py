"""Import records and remember's arguments held to what the store itself writes, and
learning state no writer makes read as damage (pure: no server)."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from agent_memory.errors import InvalidInputError, ReplyParseError
from agent_memory.schema.labels import LabelPolicy, check_labels
from agent_memory.schema.records import utility_state
from agent_memory.schema.utility import UtilityState, impossible, parse_contexts
from agent_memory.store.ops.transfer import parse_record
from agent_memory.store.ops.write import MemoryInput, validate_input
from agent_memory.store.validation import (
    MAX_COUNT,
    MAX_TIMESTAMP_MS,
    check_importance,
    check_tags,
    check_threshold,
    check_whole,
    unit_vector,
)

NOW = 1_700_000_000_000
HUGE = 10**400  # a JSON integer no float holds
GOOD: dict[str, Any] = {"format": "agent-memory/1", "id": "m1", "content": "a memory"}


def _parse(policy: LabelPolicy | None = None, **changes: Any) -> Any:
    return parse_record({**GOOD, **changes}, NOW, 4096, policy)


BAD_RECORDS: list[tuple[str, dict[str, Any], str]] = [
    ("importance beyond a float", {"importance": HUGE}, "importance"),
    ("ttl beyond a float", {"ttl_remaining_ms": HUGE}, "ttl_remaining_ms"),
    ("ttl over ten years", {"ttl_remaining_ms": 1e20}, "ttl_remaining_ms"),
    ("created_at beyond a float", {"created_at": HUGE}, "created_at"),
    ("created_at beyond 64 bits", {"created_at": 2**70}, "created_at"),
    ("created_at negative", {"created_at": -5}, "created_at"),
    ("created_at past year 9999", {"created_at": MAX_TIMESTAMP_MS + 1}, "created_at"),
    ("created_at NaN", {"created_at": math.nan}, "created_at"),
    ("last_accessed_at 1e300", {"last_accessed_at": 1e300}, "last_accessed_at"),
    ("access_count beyond a float", {"access_count": HUGE}, "access_count"),
    ("access_count beyond 64 bits", {"access_count": 2**70}, "access_count"),
    ("access_count negative", {"access_count": -1}, "access_count"),
    ("exposures beyond a float", {"exposures": HUGE}, "exposures"),
    ("exposures beyond 64 bits", {"exposures": 2**70}, "exposures"),
    ("exposures as text", {"exposures": "3"}, "exposures"),
    ("tags as a mapping", {"tags": {"a": 1}}, "tags"),
    ("label values as a mapping", {"labels": {"k": {"v": 1}}}, "labels"),
    ("label key lone surrogate", {"labels": {"k\ud800": ["v"]}}, "labels"),
    ("label value lone surrogate", {"labels": {"k": ["v\ud800"]}}, "labels"),
    ("eval_weight -1", {"learning": {"eval_sum": "0", "eval_weight": "-1"}}, "learning.eval_weight"),
    ("eval_weight negative number", {"learning": {"eval_weight": -0.5}}, "learning.eval_weight"),
    ("eval_sum beyond half the weight", {"learning": {"eval_sum": "1e308", "eval_weight": "1e-308"}},
     "learning.eval_sum"),
    ("eval_sum without weight", {"learning": {"eval_sum": "0.4"}}, "learning.eval_sum"),
    ("eval_sum as a JSON number beyond a float", {"learning": {"eval_sum": HUGE}}, "learning.eval_sum"),
    ("eval_sum with spaces", {"learning": {"eval_sum": " 0"}}, "learning.eval_sum"),
    ("eval_sum with an underscore", {"learning": {"eval_sum": "1_0", "eval_weight": "40"}},
     "learning.eval_sum"),
    ("eval_sum a bool", {"learning": {"eval_sum": True}}, "learning.eval_sum"),
    ("manual 5", {"learning": {"manual_utility": "5"}}, "learning.manual_utility"),
    ("manual -5", {"learning": {"manual_utility": -5}}, "learning.manual_utility"),
    ("reinforced 1e300", {"learning": {"last_reinforced_at": "1e300"}}, "learning.last_reinforced_at"),
    ("reinforced 1.5", {"learning": {"last_reinforced_at": "1.5"}}, "learning.last_reinforced_at"),
    ("reinforced negative", {"learning": {"last_reinforced_at": -1}}, "learning.last_reinforced_at"),
    ("context negative weight", {"learning": {"utility_ctx": json.dumps({"c": [1, -1, 5]})}},
     "learning.utility_ctx"),
    ("context time beyond 64 bits", {"learning": {"utility_ctx": json.dumps({"c": [0, 1, 2**70]})}},
     "learning.utility_ctx"),
    ("context lone surrogate", {"learning": {"utility_ctx": '{"a\ud800": [0, 1, 5]}'}},
     "learning.utility_ctx"),
    ("context not text", {"learning": {"utility_ctx": {"c": [0, 1, 5]}}}, "learning.utility_ctx"),
    ("context nested too deeply", {"learning": {"utility_ctx": "[" * 100_000}},
     "learning.utility_ctx"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "changes", "field"), BAD_RECORDS, ids=[c[0] for c in BAD_RECORDS])
def test_a_record_outside_what_the_store_writes_is_refused(
    case: str, changes: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidInputError) as caught:
        _parse(**changes)
    assert caught.value.field == field
    assert field.rsplit(".", maxsplit=1)[-1].removesuffix("s") in str(caught.value)
    assert len(str(caught.value)) < 300  # a huge number is told by its size


def test_a_record_the_store_writes_is_restored() -> None:
    learning = {"eval_sum": "0.16666666666666666", "eval_weight": "0.3333333333333333",
                "manual_utility": "-1.0", "last_reinforced_at": str(NOW),
                "utility_ctx": json.dumps({"c": [0.1, 0.5, NOW]})}  # fmt: skip
    parsed = _parse(
        created_at=0, last_accessed_at=MAX_TIMESTAMP_MS, access_count=MAX_COUNT, exposures=3,
        ttl_remaining_ms=1500.0, importance=1, tags=["a"], labels={"k": ["v"]}, learning=learning,
    )  # fmt: skip
    assert parsed is not None
    memory_input, extra = parsed
    assert memory_input.ttl == 1.5
    assert (extra["created_at"], extra["last_accessed_at"]) == (0, MAX_TIMESTAMP_MS)
    assert extra["access_count"] == MAX_COUNT
    restored = dict(zip(extra["restored"][::2], extra["restored"][1::2], strict=True))
    assert restored == {**learning, "exposures": "3"}
    numbers = _parse(learning={"eval_sum": 0.25, "eval_weight": 1, "last_reinforced_at": 1.7e12})
    assert numbers is not None
    assert numbers[1]["restored"] == (
        "eval_sum", "0.25", "eval_weight", "1", "last_reinforced_at", "1700000000000",
    )  # fmt: skip


def test_a_record_expired_in_transit_is_skipped_however_long_ago() -> None:
    for remaining in (0, -1, 0.5, -HUGE):
        assert _parse(ttl_remaining_ms=remaining) is None


def test_the_label_policy_holds_for_records() -> None:
    policy = LabelPolicy(allowed_keys=frozenset({"topic"}))
    assert _parse(policy, labels={"topic": ["a"]}) is not None
    with pytest.raises(InvalidInputError) as caught:
        _parse(policy, labels={"secret": ["v"]})
    assert caught.value.field == "labels"


def test_numbers_beyond_a_float_are_bad_input_not_overflow() -> None:
    for check in (check_importance, check_threshold):
        with pytest.raises(InvalidInputError):
            check(HUGE)
    with pytest.raises(InvalidInputError) as caught:
        unit_vector([HUGE] + [0] * 15, 16)
    assert caught.value.field == "vector"
    with pytest.raises(InvalidInputError) as caught:
        validate_input(MemoryInput(content="x", importance=HUGE), 4096)  # type: ignore[arg-type]
    assert caught.value.field == "importance" and "bits" in str(caught.value)


@pytest.mark.parametrize(
    ("value", "low", "high", "expected"),
    [(5, 0, 10, 5), (5.9, 0, 10, 5), (-3, None, 10, -3), (10, 0, 10, 10)],
)
def test_check_whole_accepts(value: Any, low: int | None, high: int, expected: int) -> None:
    assert check_whole(value, field="f", low=low, high=high) == expected


@pytest.mark.parametrize("value", [11, -1, HUGE, -HUGE, math.inf, math.nan, "5", None, True])
def test_check_whole_refuses(value: Any) -> None:
    with pytest.raises(InvalidInputError) as caught:
        check_whole(value, field="f", high=10)
    assert caught.value.field == "f"


def test_tags_and_labels_that_would_drop_values_are_refused() -> None:
    with pytest.raises(InvalidInputError):
        check_tags({"a": 1})
    assert check_tags({"a", "b"}) in (("a", "b"), ("b", "a"))  # a set has no values to drop
    with pytest.raises(InvalidInputError):
        check_labels({"k": {"v": 1}}, None)
    for labels in ({"k\udc80": ["v"]}, {"k": ["v\ud800"]}):
        with pytest.raises(InvalidInputError) as caught:
            check_labels(labels, None)
        assert caught.value.field == "labels"


def test_a_negative_eval_weight_is_damage_not_a_division_by_zero() -> None:
    assert impossible(UtilityState(eval_sum=0.5, eval_weight=1.0)) is None
    assert impossible(UtilityState(eval_weight=-1.0)) is not None
    for weight in (b"-1", b"-0.5", b"-inf"):
        with pytest.raises(ReplyParseError, match="eval_weight"):
            utility_state({"eval_sum": b"1", "eval_weight": weight})
    assert utility_state({"eval_sum": b"0.5", "eval_weight": b"1"}).eval_weight == 1.0


def test_contexts_nested_too_deeply_are_damage() -> None:
    contexts, damage = parse_contexts("[" * 100_000)
    assert contexts == {} and damage is not None


def test_unit_vector_still_scales() -> None:
    assert np.allclose(unit_vector([3, 4], 2), [0.6, 0.8])
