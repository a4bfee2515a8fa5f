"""The keys of a pydantic-ai conversation store (pure; drawn in the package docstring)."""

from __future__ import annotations

from agent_memory.integrations._keys import digest

#: The key segment of every key of a conversation store.
SEGMENT = "pai_conv"


# -- layout ------------------------------------------------------------------------------


class Layout:
    """Every key of the conversation store named ``name`` (pure)."""

    __slots__ = ("catalog", "entry_prefix", "links", "record_prefix", "refs", "updated")

    def __init__(self, name: str) -> None:
        self.catalog = f"{name}:{SEGMENT}:{{{digest(name, 16)}}}"
        self.record_prefix = f"{self.catalog}:rec:"
        self.updated = f"{self.catalog}:updated"
        self.links = f"{self.catalog}:links"
        self.refs = f"{self.catalog}:refs"
        self.entry_prefix = f"{name}:{SEGMENT}:entry:"

    def record(self, conversation_id: str) -> str:
        """The hash holding one conversation's record."""
        return self.record_prefix + conversation_id

    def scope(self, scope: str) -> str:
        """The sorted set of the conversations saved with ``scope``."""
        return f"{self.catalog}:scope:{digest(scope, 32)}"

    def entry(self, entry_id: str) -> str:
        """The hash holding one entry's message (no hash tag: entries spread out)."""
        return self.entry_prefix + entry_id


__all__ = ["SEGMENT", "Layout"]
