"""Cache keys hash the JSON BetterDB agent-cache hashes, byte for byte.

Expected strings were produced by agent-cache's ``canonicalJson`` (``JSON.stringify``
with sorted keys) on Node.js 20.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.cache.keys import canonical_json, js_number

NODE_OUTPUT: list[tuple[Any, str]] = [
    ({"x": 1e-07}, '{"x":1e-7}'),
    ({"x": 5e-05}, '{"x":0.00005}'),
    ({"x": 1e16}, '{"x":10000000000000000}'),
    ({"x": 1.5e21}, '{"x":1.5e+21}'),
    ({"x": 1.234e-06}, '{"x":0.000001234}'),
    ({"x": -2.5e-08}, '{"x":-2.5e-8}'),
    ({"x": 1.2345678901234568e20}, '{"x":123456789012345680000}'),
    ({"x": 1.0}, '{"x":1}'),
    ({"x": [0.1, 0.2, 0.30000000000000004]}, '{"x":[0.1,0.2,0.30000000000000004]}'),
    (
        {
            "10": 1,
            "9": 2,
            "a": 3,
            "B": 4,
            "\U0001f600": 5,
            "\uff01": 6,
            "01": 7,
            "4294967295": 8,
            "4294967294": 9,
            "-1": 10,
        },
        '{"9":2,"10":1,"4294967294":9,"-1":10,"01":7,"4294967295":8,"B":4,"a":3,'
        '"\U0001f600":5,"\uff01":6}',
    ),
    ({"s": 'tab\t ctl\x01 \u2028 q" \\ é'}, '{"s":"tab\\t ctl\\u0001 \u2028 q\\" \\\\ é"}'),
]


@pytest.mark.parametrize(("value", "expected"), NODE_OUTPUT)
def test_canonical_json_is_what_javascript_writes(value: Any, expected: str) -> None:
    assert canonical_json(value) == expected


def test_numbers_round_trip_through_the_javascript_form() -> None:
    for value in (5e-324, 1.7976931348623157e308, 0.1, 123.456, 2.0**53 + 2, 1e21, 1e-6):
        assert float(js_number(value)) == value
    assert js_number(-0.0) == "0"
