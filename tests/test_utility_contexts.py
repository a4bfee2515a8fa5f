"""Reading a memory's usefulness per context (pure: no server)."""

from __future__ import annotations

import json

import pytest

from agent_memory.backends.inprocess_scripts import _contexts as script_reading
from agent_memory.schema.utility import UtilityState, parse_contexts, utility

GOOD = [0.5, 1.0, 1700000000000]

CASES = [
    (None, {}, None),
    ("", {}, "not JSON"),
    ("[]", {}, None),
    (json.dumps({"c": GOOD}), {"c": (0.5, 1.0, 1700000000000)}, None),
    ("not json", {}, "not JSON"),
    ("[1, 2]", {}, "a JSON list, not an object"),
    ("3", {}, "a JSON int, not an object"),
    (json.dumps({"c": GOOD, "d": [1, "a", 3]}), {"c": (0.5, 1.0, 1700000000000)}, "1 of its 2"),
    (json.dumps({"c": [1, 2]}), {}, "1 of its 1"),
    (json.dumps({"c": [True, 1, 2]}), {}, "1 of its 1"),
    ('{"c": [NaN, 1, 2]}', {}, "1 of its 1"),
    (json.dumps({"c": [1, 2, 3, 4]}), {"c": (1.0, 2.0, 3)}, None),
]


@pytest.mark.parametrize(("raw", "entries", "damage"), CASES)
def test_parse_contexts_keeps_what_the_learning_script_keeps(
    raw: str | None, entries: dict[str, tuple[float, float, int]], damage: str | None
) -> None:
    parsed, found = parse_contexts(raw)
    assert parsed == entries
    if damage is None:
        assert found is None
    else:
        assert found is not None and damage in found
    kept, dropped = script_reading(raw)  # what complete() keeps and repairs
    assert set(kept) == set(parsed)
    assert (dropped > 0) == (found is not None)


def test_a_context_with_enough_weight_replaces_the_overall_mean() -> None:
    contexts, _ = parse_contexts(json.dumps({"c": [0.5, 1.0, 0]}))
    state = UtilityState(eval_sum=-0.5, eval_weight=1.0, contexts=contexts)
    assert utility(state, "c") == pytest.approx(0.5)
    assert utility(state, "other") == pytest.approx(-0.5)
    assert utility(state) == pytest.approx(-0.5)
