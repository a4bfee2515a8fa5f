"""The Prometheus metric families, created once per registry and shared by every store
and cache on it (each labelled by its name)."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from agent_memory.errors import InvalidInputError

_LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


@dataclass(frozen=True, slots=True)
class MetricFamilies:
    """Every metric family of the library on one registry."""

    memory_items: Gauge
    memory_recalls: Counter
    memory_near_misses: Counter
    memory_recall_duration: Histogram
    memory_operation_duration: Histogram
    memory_embedding_calls: Counter
    memory_evictions: Counter
    memory_consolidations: Counter
    memory_unmatched_tombstones: Counter
    memory_errors: Counter
    memory_events: Counter
    cache_requests: Counter
    cache_operation_duration: Histogram
    cache_cost_saved: Counter
    cache_stored_bytes: Counter
    cache_active_sessions: Gauge
    cache_errors: Counter


class _Maker:
    """Creates families on one registry, remembering each one it registered and the
    name it is registering, so a failed build can be taken back and explained."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.made: list[Counter | Gauge | Histogram] = []
        self.current = ""

    def counter(self, name: str, doc: str, labels: tuple[str, ...] = ("name",)) -> Counter:
        self.current = name
        made = Counter(name, doc, labels, registry=self.registry)
        self.made.append(made)
        return made

    def histogram(self, name: str, doc: str, labels: tuple[str, ...]) -> Histogram:
        self.current = name
        made = Histogram(name, doc, labels, buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.made.append(made)
        return made

    def gauge(self, name: str, doc: str) -> Gauge:
        self.current = name
        made = Gauge(name, doc, ("name",), registry=self.registry)
        self.made.append(made)
        return made


def _build(registry: CollectorRegistry) -> MetricFamilies:
    """Every family registered on ``registry``, or none of them.

    Raises:
        InvalidInputError: (``field="registry"``) the registry already holds a metric
            whose name clashes with one of these; the families built before the clash
            are unregistered again, so the registry is left as it was.
    """
    maker = _Maker(registry)
    try:
        return _families(maker)
    except ValueError as exc:
        # prometheus_client refuses a taken name only after the families before it were
        # registered: take those back, or every later store on this registry would fail
        # on the first of them instead of on the real clash.
        for metric in maker.made:
            registry.unregister(metric)
        raise InvalidInputError(
            f"registry already holds a metric that clashes with {maker.current!r} (the "
            f"library registers its agent_memory_* and agent_cache_* families there): {exc}",
            field="registry",
        ) from exc


def _families(maker: _Maker) -> MetricFamilies:
    counter, histogram, gauge = maker.counter, maker.histogram, maker.gauge
    return MetricFamilies(
        memory_items=gauge("agent_memory_items", "Memories stored (read from the server)"),
        memory_recalls=counter(
            "agent_memory_recalls", "Recalls by outcome", ("name", "result")
        ),
        memory_near_misses=counter(
            "agent_memory_recall_near_misses",
            "Empty recalls whose nearest memory lay within twice the threshold",
        ),
        memory_recall_duration=histogram(
            "agent_memory_recall_duration_seconds", "Recall latency", ("name",)
        ),
        memory_operation_duration=histogram(
            "agent_memory_operation_duration_seconds", "Latency per operation",
            ("name", "operation"),
        ),
        memory_embedding_calls=counter(
            "agent_memory_embedding_calls", "Calls to the embedder"
        ),
        memory_evictions=counter(
            "agent_memory_evictions", "Memories evicted by max_items_per_scope"
        ),
        memory_consolidations=counter(
            "agent_memory_consolidations", "Consolidation runs", ("name", "mode")
        ),
        memory_unmatched_tombstones=counter(
            "agent_memory_unmatched_tombstones", "Tombstones that matched no live fact"
        ),
        memory_errors=counter(
            "agent_memory_errors", "Operations that raised, by error class",
            ("name", "operation", "error"),
        ),
        memory_events=counter(
            "agent_memory_events",
            "Best-effort steps and other notable events (failures included)",
            ("name", "event"),
        ),
        cache_requests=counter(
            "agent_cache_requests", "Cache lookups by tier and result", ("name", "tier", "result")
        ),
        cache_operation_duration=histogram(
            "agent_cache_operation_duration_seconds", "Cache operation latency",
            ("name", "tier", "operation"),
        ),
        cache_cost_saved=counter(
            "agent_cache_cost_saved_micros", "Estimated LLM cost saved by hits (USD micros)"
        ),
        cache_stored_bytes=counter(
            "agent_cache_stored_bytes", "Bytes written to the cache", ("name", "tier")
        ),
        cache_active_sessions=gauge(
            "agent_cache_active_sessions", "Session threads touched recently by this process"
        ),
        cache_errors=counter(
            "agent_cache_errors", "Cache operations that raised, by tier and error class",
            ("name", "tier", "operation", "error"),
        ),
    )  # fmt: skip


_built: weakref.WeakKeyDictionary[Any, MetricFamilies] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def families_for(registry: CollectorRegistry) -> MetricFamilies:
    """The metric families registered on ``registry`` (created on first use).

    Raises:
        InvalidInputError: the registry holds a metric whose name clashes with one of
            the library's (nothing is left registered by the failed attempt).
    """
    with _lock:
        found = _built.get(registry)
        if found is None:
            found = _build(registry)
            _built[registry] = found
        return found
