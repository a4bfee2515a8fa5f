"""Change tokens that tell a client-side mirror its copy is stale.

``{name}:__mem_regver:{ns}`` changes whenever a namespace's membership changes and
``{name}:__mem_epoch:{ns}`` whenever stored vectors or filter fields change. Each change
writes a fresh random token (not a counter): a server restarted without persistence, or
restored from an older snapshot, can never present a token a mirror already holds for
different data, so the portable backend's freshness check is exact.
"""

from __future__ import annotations

import uuid

from agent_memory.core.effects import Command


def fresh_token() -> str:
    """A token no earlier state of any store carries."""
    return uuid.uuid4().hex


def bump(key: str) -> Command:
    """Mark the state behind ``key`` as changed. In a batch it runs after the batch's
    scripts, also after one sent again (``NOSCRIPT``): a token written before the change
    it announces would let a mirror cache the state without it under the new token."""
    return Command(("SET", key, fresh_token()), after_scripts=True)
