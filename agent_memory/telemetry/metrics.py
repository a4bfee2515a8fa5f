"""The Prometheus metric families, created once per registry and shared by every store
and cache on it (each labelled by its name)."""

from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

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


def _build(registry: CollectorRegistry) -> MetricFamilies:
    def counter(name: str, doc: str, labels: tuple[str, ...] = ("name",)) -> Counter:
        return Counter(name, doc, labels, registry=registry)

    def histogram(name: str, doc: str, labels: tuple[str, ...]) -> Histogram:
        return Histogram(name, doc, labels, buckets=_LATENCY_BUCKETS, registry=registry)

    return MetricFamilies(
        memory_items=Gauge(
            "agent_memory_items", "Memories stored (read from the server)", ("name",),
            registry=registry,
        ),
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
        cache_active_sessions=Gauge(
            "agent_cache_active_sessions", "Session threads touched recently by this process",
            ("name",), registry=registry,
        ),
    )  # fmt: skip


_families: weakref.WeakKeyDictionary[Any, MetricFamilies] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def families_for(registry: CollectorRegistry) -> MetricFamilies:
    """The metric families registered on ``registry`` (created on first use)."""
    with _lock:
        found = _families.get(registry)
        if found is None:
            found = _build(registry)
            _families[registry] = found
        return found
