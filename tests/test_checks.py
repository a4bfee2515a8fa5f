"""The shared text check: each rule, and the three policies built on it."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory.cache.keys import check_text as check_identifier
from agent_memory.core.checks import check_str
from agent_memory.embedders.base import check_text as check_embedder_text
from agent_memory.errors import InvalidInputError
from agent_memory.store.validation import check_text as check_content


@pytest.mark.parametrize(
    ("value", "rules", "message"),
    [
        (b"x", {}, "must be a str, got bytes"),
        ("\ud800", {}, "not valid Unicode"),
        ("", {"non_empty": True}, "must not be empty"),
        ("  \n", {"non_blank": True}, "only whitespace"),
        ("abcd", {"max_chars": 3}, "longer than 3 characters"),
        ("éé", {"max_bytes": 3}, "4 bytes of UTF-8"),
        ("a\x00b", {"no_controls": True}, "control characters"),
    ],
)
def test_each_rule_names_the_field(value: Any, rules: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message) as caught:
        check_str(value, field="note", **rules)
    assert caught.value.field == "note"


def test_text_within_the_rules_comes_back() -> None:
    text = "tab\tand newline\n"
    assert check_str(text, field="f", non_blank=True, max_bytes=64, no_controls=True) is text


def test_each_caller_keeps_its_policy() -> None:
    assert check_embedder_text("") == ""  # an empty text embeds
    with pytest.raises(InvalidInputError):
        check_identifier("", field="tool")
    assert check_identifier(" ", field="tool") == " "
    with pytest.raises(InvalidInputError):
        check_content(" ", field="content", max_bytes=10)
    with pytest.raises(InvalidInputError):
        check_identifier("x" * 1025, field="tool")
