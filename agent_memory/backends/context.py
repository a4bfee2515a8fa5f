"""Shared state of one memory store, read by its operations."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_memory.core.effects import InFlight
from agent_memory.schema.labels import LabelPolicy
from agent_memory.schema.layout import Keys
from agent_memory.schema.lexical import VECTOR_FORM
from agent_memory.schema.term_choice import CANDIDATE_BUDGET, DocumentFrequencies
from agent_memory.schema.types import RecallWeights
from agent_memory.schema.utility import Forgetting
from agent_memory.search.dialect import Dialect
from agent_memory.telemetry import Telemetry

if TYPE_CHECKING:
    from agent_memory.backends.base import Backend

logger = logging.getLogger("agent_memory.store")

Clock = Callable[[], float]


def system_clock() -> float:
    """Wall-clock seconds since the epoch (the default clock)."""
    return time.time()


@dataclass(slots=True)
class LiveConfig:
    """Settings that ``{name}:__mem_config`` may change while the store runs."""

    threshold: float
    weights: RecallWeights
    half_life_seconds: float
    max_items_per_scope: int | None


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """What is fixed when the store is made (validated by its constructor)."""

    embed: Callable[[str], Any]
    embed_many: Callable[[list[str]], Any] | None
    clock: Clock
    initial_config: LiveConfig  # the constructor's values: ``{name}:__mem_config`` overrides
    backend_choice: str
    max_content_bytes: int
    in_process: bool = False
    cluster: bool = False
    dedupe: bool = False
    dedupe_distance: float = 0.05
    keep_fact_history: bool = False
    label_policy: LabelPolicy | None = None
    labeler: Callable[[str], Any] | None = None
    reinforcement: bool = False
    forgetting: Forgetting | None = None
    max_receipts: int = 10_000
    receipt_ttl: float = 3600.0
    max_contexts: int = 8
    ft_dialect: str = "auto"  # "baseline": only the valkey-search 1.0.2 dialect
    wait_replicas: int = 0  # writes return once this many replicas have them (WAIT)
    wait_timeout_ms: int = 1000
    lexical_budget: int = CANDIDATE_BUDGET  # memories one lexical search may visit


@dataclass(slots=True)
class StoreContext:
    """Everything an operation needs to know about its store (no client): the fixed
    settings, and what changes while the store runs (live configuration, what
    ``ensure_index`` found, process-local counters)."""

    keys: Keys
    settings: StoreSettings
    config: LiveConfig
    dim: int | None = None
    embedder_id: str | None = None  # the store's embedder (``{name}:__mem_meta``), if known
    dialect: Dialect | None = None
    backend: Backend | None = None
    lexical_form: str = VECTOR_FORM  # how memories carry their terms (chosen by the backend)
    near_miss_warned: bool = False
    frequencies: DocumentFrequencies = field(default_factory=DocumentFrequencies)
    ensuring: InFlight = field(default_factory=InFlight)  # a lazy ensure_index under way
    # the server's record of the store's identity changed or vanished since ensure_index
    # checked it (wiped, the name reopened by another width): checked again first
    identity_stale: bool = False
    counters: dict[str, int] = field(default_factory=dict)
    telemetry: Telemetry | None = None
    # foreign records the last adoption scan left as they were (it could not adopt
    # them): logged and counted once, and no reason for the periodic check to scan again
    foreign_skipped: set[str] = field(default_factory=set)
    # claims (keys, token) of operations abandoned while holding them: an operation
    # closed mid-way cannot send commands, so the store releases them for it
    abandoned_claims: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    # the threads of a blocking store count together: ``counters`` is read, then written
    _count_lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def now_ms(self) -> int:
        return int(self.settings.clock() * 1000)

    def count(self, name: str, amount: int = 1) -> None:
        """Count a process-local event (exported by the telemetry layer); exact when
        threads share the store."""
        with self._count_lock:
            self.counters[name] = self.counters.get(name, 0) + amount
        if self.telemetry is not None:
            self.telemetry.count(name, amount)
