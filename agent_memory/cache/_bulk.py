"""Maintenance sub-operations over many keys, safe on a cluster.

Keys are deleted one ``UNLINK`` per key inside non-atomic pipelines, so a cluster client
routes each command to the node owning its slot (a multi-key ``DEL`` would fail with
CROSSSLOT). Key lists come from :class:`~agent_memory.core.effects.ScanKeys`, which walks
every primary.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_memory.core import replies
from agent_memory.core.effects import Command, Operation, execute_batch, scan_keys
from agent_memory.core.replies import raise_first_error

CHUNK = 500


def unlink_keys(keys: Sequence[Any]) -> Operation[int]:
    """Sub-operation: delete ``keys``; returns how many existed."""
    removed = 0
    for start in range(0, len(keys), CHUNK):
        chunk = keys[start : start + CHUNK]
        got = yield from execute_batch([Command(("UNLINK", key)) for key in chunk])
        raise_first_error(got)
        removed += sum(replies.integer(r) for r in got)
    return removed


def get_values(keys: Sequence[Any]) -> Operation[list[Any]]:
    """Sub-operation: ``GET`` each key (pipelined in chunks); ``None`` for missing keys,
    the error instance for a key the server refused to read (another type, say)."""
    values: list[Any] = []
    for start in range(0, len(keys), CHUNK):
        chunk = keys[start : start + CHUNK]
        got = yield from execute_batch([Command(("GET", key)) for key in chunk])
        values.extend(got)
    return values


def scan_and_unlink(pattern: str) -> Operation[int]:
    """Sub-operation: delete every key matching ``pattern`` on every primary."""
    keys = yield from scan_keys(pattern)
    removed = yield from unlink_keys(keys)
    return removed
