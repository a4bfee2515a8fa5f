"""The record a foreign hash becomes (pure)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from agent_memory.errors import InvalidInputError
from agent_memory.schema.records import vector_blob
from agent_memory.store.ops.adopt import FOREIGN_FIELDS, foreign_record

DIM = 4
BLOB = vector_blob(np.array([1.0, 0.0, 0.0, 0.0], dtype=np.float32))


def _values(**fields: str) -> list[Any]:
    base = {"content": "note", "importance": "0.7", "created_at": "1000"}
    return [{**base, **fields}.get(name) for name in FOREIGN_FIELDS]


def test_their_fields_map_to_our_record() -> None:
    record = foreign_record(
        "abc-1", _values(tags="a,b", agentId="bot", namespace="acme", access_count="3"),
        BLOB, 5000, DIM,
    )  # fmt: skip
    assert record["scope"] == {"namespace": "acme", "agent_id": "bot", "thread_id": None}
    assert record["tags"] == ["a", "b"] and record["importance"] == 0.7
    assert (record["created_at"], record["last_accessed_at"]) == (1000, 1000)
    assert record["access_count"] == 3 and record["ttl_remaining_ms"] == 5000
    assert record["durability"] == "shared" and record["vector"] == [1.0, 0.0, 0.0, 0.0]
    assert foreign_record("abc-1", _values(), BLOB, -1, DIM)["ttl_remaining_ms"] is None


@pytest.mark.parametrize(
    ("memory_id", "values", "blob", "message"),
    [
        ("abc", _values(namespace="acme-corp"), BLOB, "namespace 'acme-corp' is not plain"),
        ("abc", _values(threadId="t_1"), BLOB, "threadId 't_1' is not plain"),
        ("abc", _values(tags="ok,dark-mode"), BLOB, "tags 'dark-mode' is not plain"),
        # plain, but longer than a value indexed as it is: the message says so
        ("abc", _values(agentId="a" * 65), BLOB, "agentId 'a{20}.* is over 64 characters"),
        ("abc", _values(content=None), BLOB, "no content"),
        ("abc", _values(), None, "no vector"),
        ("abc", _values(), BLOB[:8], "8 bytes"),
        ("abc", _values(importance="high"), BLOB, "importance is not a number"),
        ("a b", _values(), BLOB, "not a memory id"),
    ],
)
def test_records_that_cannot_be_adopted_say_why(
    memory_id: str, values: list[Any], blob: Any, message: str
) -> None:
    with pytest.raises(InvalidInputError, match=message):
        foreign_record(memory_id, values, blob, -1, DIM)
