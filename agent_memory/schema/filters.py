"""Which memories an operation may see, as a backend-neutral value.

The FT backend turns a :class:`MemoryFilter` into a query string; the portable and
in-process backends evaluate it on the stored tokens. Both read the same tokens, so
both return the same memories.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from agent_memory.schema.encoding import encode_value, namespace_token, session_token
from agent_memory.schema.layout import (
    F_AGENT,
    F_LABELS,
    F_SESSION,
    F_SOURCE,
    F_TAGS,
    F_THREAD,
    TAG_SEPARATOR,
)
from agent_memory.schema.types import Scope


@dataclass(frozen=True, slots=True)
class MemoryFilter:
    """Conditions on stored tokens; every set condition must hold (AND).

    Attributes:
        namespace: namespace token (always set: the tenant boundary).
        session: session token to require, or ``None`` for any session.
        agent: agent token, or ``None`` for any agent.
        thread: thread token, or ``None`` for any thread.
        tags: tag tokens that must all be present.
        sources: when set, the memory's source must be one of these (plain words).
        exclude_sources: memories with one of these sources are excluded.
        label_groups: for each group, the memory must carry one of its label tokens.
    """

    namespace: str
    session: str | None = None
    agent: str | None = None
    thread: str | None = None
    tags: tuple[str, ...] = ()
    sources: tuple[str, ...] | None = None
    exclude_sources: tuple[str, ...] = ()
    label_groups: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        # Hashable whatever sequences a caller passed: filters are memoised by value.
        for name in ("tags", "exclude_sources"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        if self.sources is not None:
            object.__setattr__(self, "sources", tuple(self.sources))
        object.__setattr__(self, "label_groups", tuple(tuple(g) for g in self.label_groups))

    def token_fields(self) -> tuple[str, ...]:
        """The stored token fields :meth:`matches` reads for this filter (the namespace is
        the set a read walks, never a field it tests)."""
        wanted = (
            (F_SESSION, self.session is not None),
            (F_AGENT, self.agent is not None),
            (F_THREAD, self.thread is not None),
            (F_TAGS, bool(self.tags)),
            (F_LABELS, bool(self.label_groups)),
            (F_SOURCE, self.sources is not None or bool(self.exclude_sources)),
        )
        return tuple(name for name, needed in wanted if needed)

    def matches(self, fields: Mapping[str, str | None]) -> bool:
        """Evaluate the filter on a memory's token fields (portable backends)."""
        if self.session is not None and fields.get(F_SESSION) != self.session:
            return False
        if self.agent is not None and fields.get(F_AGENT) != self.agent:
            return False
        if self.thread is not None and fields.get(F_THREAD) != self.thread:
            return False
        if self.tags:
            present = set((fields.get(F_TAGS) or "").split(TAG_SEPARATOR))
            if not all(tag in present for tag in self.tags):
                return False
        if self.label_groups:
            carried = set((fields.get(F_LABELS) or "").split(TAG_SEPARATOR))
            if not all(carried.intersection(group) for group in self.label_groups):
                return False
        source = fields.get(F_SOURCE)
        if self.sources is not None and source not in self.sources:
            return False
        return not (self.exclude_sources and source in self.exclude_sources)


def scope_filter(
    scope: Scope | None,
    tags: Iterable[str] = (),
    *,
    session: str | bool | None = False,
    label_groups: tuple[tuple[str, ...], ...] = (),
) -> MemoryFilter:
    """Filter for a scope.

    ``session=False`` (default) leaves the session unconstrained; ``None`` selects shared
    memories; a string selects that session's memories.
    """
    scope = scope or Scope()
    session_tok = session_token(session) if isinstance(session, str) or session is None else None
    return MemoryFilter(
        namespace=namespace_token(scope.namespace),
        session=session_tok,
        agent=encode_value(scope.agent_id) if scope.agent_id is not None else None,
        thread=encode_value(scope.thread_id) if scope.thread_id is not None else None,
        tags=tuple(encode_value(tag) for tag in tags),
        label_groups=label_groups,
    )
