"""Label tokens and context digests (pure)."""

from __future__ import annotations

import hashlib

from agent_memory.schema.encoding import encode_value
from agent_memory.schema.labels import Labels, context_digest, filter_groups, label_tokens


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
