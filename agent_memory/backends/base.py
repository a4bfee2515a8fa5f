"""The backend protocol: filtered KNN over the stored memories.

A query searches either the embeddings (cosine distance) or, with ``lexical=True``, the
memories' terms: by the hashed term vectors (field ``lex``, inner product: the match
distance is ``1 - ip``) or, where the store keeps its terms in a server-side full-text
index, by BM25 over ``lex_text`` (``terms``; the match distance is meaningless there
and set to 0). :meth:`Backend.search` also carries extra commands (the recall's term
statistics) in the same round trip as the searches.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import numpy as np
from numpy.typing import NDArray

from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Command, Operation
from agent_memory.schema.filters import MemoryFilter
from agent_memory.schema.layout import ITEM_FIELDS


@dataclass(frozen=True, slots=True)
class KnnQuery:
    """One filtered nearest-neighbour query."""

    filter: MemoryFilter
    k: int
    vector: NDArray[np.float32]
    lexical: bool = False  # search the memories' terms instead of the embedding
    fields: tuple[str, ...] = ITEM_FIELDS  # hash fields returned with each match
    terms: tuple[str, ...] = ()  # the analysed query terms of a lexical query


class KnnMatch(NamedTuple):
    """A memory found by a KNN query, with the item fields needed for ranking/return.

    A named tuple, not a frozen dataclass: a recall builds about a hundred of these, and
    a tuple is built in a third of the time.
    """

    id: str
    distance: float
    fields: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class SearchOutcome:
    """Matches of each query (best first) and the replies of the extra commands (an
    :class:`~agent_memory.errors.AgentMemoryError` instance for a failed one)."""

    matches: list[list[KnnMatch]]
    extra: list[Any]


class Backend(Protocol):
    """What the memory store needs from a search backend."""

    name: str

    def prepare(self, ctx: StoreContext) -> Operation[bool]:
        """Create whatever the backend needs on the server; True when created now."""
        ...

    def knn(
        self, ctx: StoreContext, queries: Sequence[KnnQuery]
    ) -> Operation[list[list[KnnMatch]]]:
        """Run the queries (in one round trip where possible), nearest first each."""
        ...

    def search(
        self, ctx: StoreContext, queries: Sequence[KnnQuery], extra: Sequence[Command]
    ) -> Operation[SearchOutcome]:
        """Run the queries and ``extra`` commands, sent with the searches' round trip
        (the FT backend: one round trip; the portable one: with its field fetch)."""
        ...

    def drop(self, ctx: StoreContext) -> Operation[None]:
        """Remove the backend's server-side structures (not the memories)."""
        ...
