"""Store names: a name whose keys would lie under another store's index prefix
``{other}:mem:`` is refused by every class that takes one; any other name is kept."""

from __future__ import annotations

from typing import Any

import pytest
import redis
import redis.asyncio

from agent_memory import AgentMemory, MemoryStore, SyncAgentMemory, SyncMemoryStore
from agent_memory.errors import InvalidInputError
from agent_memory.store.validation import check_name
from tests.support import TableEmbedder

# Store "a"'s index prefix is "a:mem:", and every key of these starts with it.
UNDER_ANOTHER_INDEX = ["a:mem", "a:mem:b", "a:b:mem", "a:mem:mem", "a.b:mem:c", "-:mem"]
# No valid name's index prefix holds any key of these (":mem" would need the empty name).
KEPT = ["a", "mem", "mem:a", ":mem", "a:memory", "a:mem2", "a:b", "a:_mem:b", "a:MEM", "a.mem"]

_CLASSES: list[tuple[type[Any], Any]] = [
    (MemoryStore, redis.asyncio.Redis),
    (SyncMemoryStore, redis.Redis),
    (AgentMemory, redis.asyncio.Redis),
    (SyncAgentMemory, redis.Redis),
]


@pytest.mark.parametrize("name", UNDER_ANOTHER_INDEX)
@pytest.mark.parametrize(("cls", "client"), _CLASSES, ids=lambda c: getattr(c, "__name__", c))
def test_a_name_under_another_stores_index_prefix_is_refused(
    cls: type[Any], client: Any, name: str
) -> None:
    with pytest.raises(InvalidInputError, match=":mem") as info:
        cls(client(), name, TableEmbedder())  # refused before any I/O
    assert info.value.field == "name"


@pytest.mark.parametrize("name", KEPT)
def test_names_whose_keys_no_index_prefix_holds_are_kept(name: str) -> None:
    assert check_name(name) == name
    assert MemoryStore(redis.asyncio.Redis(), name, TableEmbedder()).name == name
