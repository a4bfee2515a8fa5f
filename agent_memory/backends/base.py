"""The backend protocol: filtered KNN over the stored memories."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from agent_memory.core.effects import Operation
from agent_memory.store.context import StoreContext
from agent_memory.store.filters import MemoryFilter


@dataclass(frozen=True, slots=True)
class KnnQuery:
    """One filtered nearest-neighbour query."""

    filter: MemoryFilter
    k: int
    vector: NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class KnnMatch:
    """A memory found by a KNN query, with the item fields needed for ranking/return."""

    id: str
    distance: float
    fields: Mapping[str, Any]


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

    def drop(self, ctx: StoreContext) -> Operation[None]:
        """Remove the backend's server-side structures (not the memories)."""
        ...
