"""Label tokens, context digests and label policies (pure)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from agent_memory.errors import InvalidInputError
from agent_memory.schema.encoding import encode_value
from agent_memory.schema.labels import (
    LabelPolicy,
    Labels,
    context_digest,
    filter_groups,
    label_tokens,
)


def _old_digest(labels: Labels) -> str:
    raw = "\x1f".join(f"{k}={v}" for k, values in sorted(labels.items()) for v in values)
    return hashlib.blake2b(raw.encode("utf-8"), digest_size=8).hexdigest()


def test_ordinary_keys_keep_their_stored_tokens_and_digests() -> None:
    """Keys without "=" or a backslash give the tokens and digests earlier releases
    stored: nothing needs re-indexing."""
    labels: Labels = {"topic": ("deploys", "red=x", "a\\b"), "team lead": ("ann",)}
    assert label_tokens(labels) == [
        encode_value("team lead=ann"),
        encode_value("topic=deploys"),
        encode_value("topic=red=x"),
        encode_value("topic=a\\b"),
    ]
    assert context_digest(labels) == _old_digest(labels)


def test_a_key_holding_equals_or_backslash_never_shares_a_pair() -> None:
    colliding: list[tuple[Labels, Labels]] = [  # one text "key=value" before the escape
        ({"team=red": ("x",)}, {"team": ("red=x",)}),
        ({"a\\=b": ("c",)}, {"a\\": ("b=c",)}),
    ]
    for one, other in colliding:
        assert _old_digest(one) == _old_digest(other)
    # escaping "=" alone would give both the text k\==v
    colliding.append(({"k=": ("v",)}, {"k\\": ("=v",)}))
    for one, other in colliding:
        assert set(label_tokens(one)).isdisjoint(label_tokens(other))
        assert filter_groups(one) != filter_groups(other)
        assert context_digest(one) != context_digest(other)


@pytest.mark.parametrize(
    ("kwargs", "problem"),
    [
        ({"allowed_keys": "team"}, "allowed_keys must be a collection of strings"),
        ({"allowed_keys": b"team"}, "allowed_keys must be a collection of strings"),
        ({"allowed_keys": {"team": ["red"]}}, "allowed_keys must be a collection of strings"),
        ({"allowed_keys": 5}, "allowed_keys must be a collection of strings"),
        ({"allowed_keys": ["team", 5]}, "label key must be a str"),
        ({"allowed_values": {"team": "red"}}, r"allowed_values\['team'\] must be a collection"),
        ({"allowed_values": ["team"]}, "allowed_values must be a mapping"),
        ({"allowed_values": None}, "allowed_values must be a mapping"),
        ({"max_values_per_key": "3"}, "max_values_per_key must be an int"),
        ({"max_values_per_key": True}, "max_values_per_key must be an int"),
        ({"max_values_per_key": 2.5}, "max_values_per_key must be an int"),
        ({"max_values_per_key": 0}, r"max_values_per_key must be in \[1, 16\]"),
    ],
)
def test_a_label_policy_refuses_values_of_the_wrong_type(
    kwargs: dict[str, Any], problem: str
) -> None:
    """A string where a collection belongs would be read as its letters; any other
    wrong type would fail later, far from its cause."""
    with pytest.raises(InvalidInputError, match=problem) as err:
        LabelPolicy(**kwargs)
    assert err.value.field == "label_policy"


def test_a_label_policy_normalises_what_it_is_given() -> None:
    policy = LabelPolicy(
        allowed_keys=["Team", "kind"], allowed_values={"Team": ("Red", "blue ")},
        max_values_per_key=3,
    )  # fmt: skip
    assert policy.allowed_keys == frozenset({"team", "kind"})
    assert policy.allowed_values == {"team": frozenset({"red", "blue"})}
