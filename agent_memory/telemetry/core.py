"""One :class:`Telemetry` per store or cache: spans, latency and event counters."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any

from opentelemetry import trace
from prometheus_client import CollectorRegistry

from agent_memory._version import __version__
from agent_memory.errors import InvalidInputError
from agent_memory.telemetry.metrics import MetricFamilies, families_for

logger = logging.getLogger(__name__)

_TRACER = trace.get_tracer("agent_memory", __version__)

AttributeValue = str | bool | int | float


class OperationScope:
    """Handle of a running operation: add span attributes as results become known."""

    __slots__ = ("attributes", "span")

    def __init__(self, span: trace.Span) -> None:
        self.span = span
        self.attributes: dict[str, AttributeValue] = {}

    def set(self, key: str, value: AttributeValue | None) -> None:
        if value is None:
            return
        self.attributes[key] = value
        if self.span.is_recording():
            self.span.set_attribute(key, value)


class Telemetry:
    """Metrics and traces of one named store (``kind="memory"``) or cache (``"cache"``).

    Args:
        name: the store name, used as the ``name`` label.
        registry: a ``prometheus_client.CollectorRegistry``; ``None`` records no metrics.

    Raises:
        InvalidInputError: (``field="registry"``) ``registry`` is not a registry, or it
            already holds a metric whose name clashes with one of the library's.
    """

    def __init__(
        self, name: str, *, kind: str = "memory", registry: CollectorRegistry | None = None
    ) -> None:
        if registry is not None and not isinstance(registry, CollectorRegistry):
            raise InvalidInputError(
                f"registry must be a prometheus_client CollectorRegistry or None, got "
                f"{type(registry).__name__}",
                field="registry",
            )
        self.name = name
        self.kind = kind
        self.families: MetricFamilies | None = (
            families_for(registry) if registry is not None else None
        )

    @contextlib.contextmanager
    def operation(
        self,
        operation: str,
        *,
        tier: str | None = None,
        attributes: Mapping[str, AttributeValue] | None = None,
    ) -> Iterator[OperationScope]:
        """Span + latency observation (+ error count) around one public operation."""
        span_name = f"agent_cache.{tier}.{operation}" if tier else f"agent_memory.{operation}"
        start = time.perf_counter()
        with _TRACER.start_as_current_span(span_name, record_exception=True) as span:
            scope = OperationScope(span)
            if tier:
                scope.set("cache.name", self.name)
                scope.set("cache.tier", tier)
            else:
                scope.set("memory.store", self.name)
            for key, value in (attributes or {}).items():
                scope.set(key, value)
            try:
                yield scope
            except Exception as exc:
                self._error(operation, tier, exc)
                raise
            finally:
                self._observe(operation, tier, time.perf_counter() - start)

    @contextlib.contextmanager
    def child_span(self, name: str) -> Iterator[None]:
        """A child span (e.g. embedding time inside a recall)."""
        with _TRACER.start_as_current_span(f"agent_memory.{name}"):
            yield

    def _observe(self, operation: str, tier: str | None, seconds: float) -> None:
        f = self.families
        if f is None:
            return
        if tier:
            f.cache_operation_duration.labels(self.name, tier, operation).observe(seconds)
            return
        f.memory_operation_duration.labels(self.name, operation).observe(seconds)
        if operation.startswith("recall"):
            f.memory_recall_duration.labels(self.name).observe(seconds)

    def _error(self, operation: str, tier: str | None, exc: Exception) -> None:
        """Count a failed operation: in ``agent_memory_errors`` (every operation, cache
        ones included, as always) and, for a cache operation, in ``agent_cache_errors``
        with its tier too (two tiers of one name stay apart)."""
        f = self.families
        if f is None:
            return
        error = type(exc).__name__
        f.memory_errors.labels(self.name, operation, error).inc()
        if tier:
            f.cache_errors.labels(self.name, tier, operation, error).inc()

    def count(self, event: str, amount: int = 1) -> None:
        """Count a library event under its metric (unknown events go to ``*_events``)."""
        f = self.families
        if f is None or amount <= 0:
            return
        n = self.name
        if event == "recall_hits":
            f.memory_recalls.labels(n, "hit").inc(amount)
        elif event == "recall_empty":
            f.memory_recalls.labels(n, "empty").inc(amount)
        elif event == "near_misses":
            f.memory_near_misses.labels(n).inc(amount)
        elif event == "embedding_calls":
            f.memory_embedding_calls.labels(n).inc(amount)
        elif event == "evictions":
            f.memory_evictions.labels(n).inc(amount)
        elif event == "unmatched_tombstones":
            f.memory_unmatched_tombstones.labels(n).inc(amount)
        elif event.startswith("consolidations:"):
            f.memory_consolidations.labels(n, event.split(":", 1)[1]).inc(amount)
        elif event == "recalls":
            return  # the recall total is the sum of hit + empty
        else:
            f.memory_events.labels(n, event).inc(amount)

    def set_items(self, count: int) -> None:
        if self.families is not None:
            self.families.memory_items.labels(self.name).set(count)

    def cache_request(
        self, tier: str, hit: bool, *, tool: str | None = None, amount: int = 1
    ) -> None:
        if self.families is not None and amount > 0:
            result = "hit" if hit else "miss"
            self.families.cache_requests.labels(self.name, tier, result).inc(amount)

    def cache_cost_saved(self, micros: int) -> None:
        if self.families is not None and micros > 0:
            self.families.cache_cost_saved.labels(self.name).inc(micros)

    def cache_stored(self, tier: str, size: int) -> None:
        if self.families is not None and size > 0:
            self.families.cache_stored_bytes.labels(self.name, tier).inc(size)

    def cache_sessions(self, active: int) -> None:
        if self.families is not None:
            self.families.cache_active_sessions.labels(self.name).set(active)


def describe_result(scope: OperationScope, result: Any) -> None:
    """Span attributes from an operation's result (duck-typed; no import cycles)."""
    for attribute, key in (
        ("candidates", "memory.candidates"),
        ("nearest_distance", "memory.nearest_distance"),
        ("near_miss", "memory.near_miss"),
        ("backend", "memory.backend"),
    ):
        value = getattr(result, attribute, None)
        if isinstance(value, (str, bool, int, float)):
            scope.set(key, value)
    if hasattr(result, "selection_id") and hasattr(result, "__len__"):
        scope.set("memory.results", len(result))
    hit = getattr(result, "hit", None)
    if isinstance(hit, bool):
        scope.set("cache.hit", hit)
        cache_key = getattr(result, "key", None)
        if isinstance(cache_key, str):
            scope.set("cache.key", cache_key)
