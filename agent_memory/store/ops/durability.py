"""Opt-in synchronous replication of writes (``wait_replicas``).

Replication is asynchronous: a write a primary acknowledged can be lost with it. With
``MemoryStore(..., wait_replicas=n, wait_timeout_ms=t)`` the batch that stores memories
(or the last batch of a deletion) ends with ``WAIT n t`` on the same connection, so the
call returns only once ``n`` replicas have the write, or raises
:class:`~agent_memory.errors.ReplicationTimeoutError` (the write stays applied on the
primary; retrying it with the same id is safe). ``WAIT`` covers every earlier write of
its connection, and the replication stream is ordered, so one ``WAIT`` after the last
write of a call covers the call.
"""

from __future__ import annotations

from typing import Any

from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Command
from agent_memory.core.replies import integer
from agent_memory.errors import ReplicationTimeoutError


def wait_commands(ctx: StoreContext) -> list[Command]:
    """``[WAIT n timeout]`` when the store waits for replicas, else nothing."""
    wanted = ctx.settings.wait_replicas
    if not wanted:
        return []
    # After any script of its batch the server did not know and is sent again: a WAIT
    # that ran before the write it should cover would cover nothing.
    args = ("WAIT", str(wanted), str(ctx.settings.wait_timeout_ms))
    return [Command(args, after_scripts=True)]


def check_replicated(ctx: StoreContext, reply: Any, what: str) -> None:
    """Raise unless the ``WAIT`` reply counts ``wait_replicas`` replicas.

    Raises:
        ReplicationTimeoutError: fewer replicas acknowledged ``what`` in time.
    """
    wanted = ctx.settings.wait_replicas
    acknowledged = integer(reply)
    if acknowledged < wanted:
        ctx.count("replication_timeouts")
        raise ReplicationTimeoutError(
            f"{what} was applied on the primary, but {acknowledged} of {wanted} replicas "
            f"acknowledged it within {ctx.settings.wait_timeout_ms} ms; it may be lost if "
            "the primary fails now (retrying with the same id is safe)",
            acknowledged=acknowledged,
            wanted=wanted,
        )
