"""The fixed settings of a memory store from its constructor's arguments (pure; no I/O).

Shared by :class:`~agent_memory.store.memory_store.MemoryStore` and its generated
blocking twin, so both check their arguments alike.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_memory.backends.context import Clock, StoreSettings, system_clock
from agent_memory.backends.inprocess import is_in_process
from agent_memory.core.clients import is_cluster_client
from agent_memory.errors import CapabilityError, InvalidInputError
from agent_memory.schema.labels import LabelPolicy
from agent_memory.schema.types import RecallWeights
from agent_memory.schema.utility import Forgetting
from agent_memory.store.arguments import (
    callable_or_none,
    checked,
    count_or_zero,
    positive_int,
    positive_number,
    validated_config,
)
from agent_memory.store.validation import check_threshold

DEFAULT_THRESHOLD = 0.33
"""The recall threshold of an embedder that recommends none (cosine distance)."""
BACKENDS = ("auto", "ft", "portable")
FT_DIALECTS = ("auto", "baseline")


def refresh_interval(config_refresh: Any) -> float | None:
    """``config_refresh``: seconds > 0, or ``None``."""
    if config_refresh is not None and not (
        isinstance(config_refresh, (int, float)) and config_refresh > 0
    ):
        raise InvalidInputError(
            "config_refresh must be > 0 seconds or None", field="config_refresh"
        )
    return config_refresh


def store_settings(
    client: Any,
    *,
    embed: Callable[[str], Any],
    embed_many: Callable[[list[str]], Any] | None,
    default_threshold: float | None,
    weights: RecallWeights | None,
    half_life_seconds: float,
    max_items_per_scope: int | None,
    clock: Clock | None,
    backend: str,
    max_content_bytes: int,
    dedupe: bool,
    dedupe_distance: float,
    keep_fact_history: bool,
    label_policy: LabelPolicy | None,
    labeler: Callable[[str], Any] | None,
    reinforcement: bool,
    forgetting: Forgetting | None,
    max_receipts: int,
    receipt_ttl: float,
    ft_dialect: str,
    wait_replicas: int,
    wait_timeout_ms: int,
    lexical_budget: int,
) -> StoreSettings:
    """Every argument checked, as the store's settings (its live configuration starts
    from ``initial_config``).

    Raises:
        InvalidInputError: a bad argument (named by its ``field``).
        CapabilityError: ``wait_replicas`` with a cluster client.
    """
    if not callable(embed):
        raise InvalidInputError("embed must be callable", field="embed")
    if embed_many is not None and not callable(embed_many):
        raise InvalidInputError("embed_many must be callable or None", field="embed_many")
    if clock is not None and not callable(clock):
        raise InvalidInputError("clock must be callable or None", field="clock")
    if backend not in BACKENDS:
        raise InvalidInputError(f"backend must be one of {BACKENDS}", field="backend")
    if ft_dialect not in FT_DIALECTS:
        raise InvalidInputError(f"ft_dialect must be one of {FT_DIALECTS}", field="ft_dialect")
    if (
        isinstance(max_content_bytes, bool)
        or not isinstance(max_content_bytes, int)
        or max_content_bytes < 1
    ):
        raise InvalidInputError(
            "max_content_bytes must be a positive int", field="max_content_bytes"
        )
    replicas = count_or_zero(wait_replicas, "wait_replicas")
    cluster = is_cluster_client(client)
    if replicas and cluster:
        # WAIT counts the replicas of one connection's node, and a cluster write spans
        # several primaries through pooled connections: not supported yet.
        raise CapabilityError("wait_replicas is not supported with a cluster client")
    if default_threshold is None:
        default_threshold = getattr(embed, "recommended_threshold", DEFAULT_THRESHOLD)
    return StoreSettings(
        embed=embed,
        embed_many=embed_many,
        clock=clock or system_clock,
        initial_config=validated_config(
            default_threshold, weights, half_life_seconds, max_items_per_scope
        ),
        backend_choice=backend,
        max_content_bytes=max_content_bytes,
        in_process=is_in_process(client),
        cluster=cluster,
        dedupe=bool(dedupe),
        dedupe_distance=check_threshold(dedupe_distance, "dedupe_distance"),
        keep_fact_history=bool(keep_fact_history),
        label_policy=checked(label_policy, LabelPolicy, "label_policy"),
        labeler=callable_or_none(labeler, "labeler"),
        reinforcement=bool(reinforcement),
        forgetting=checked(forgetting, Forgetting, "forgetting"),
        max_receipts=positive_int(max_receipts, "max_receipts"),
        receipt_ttl=positive_number(receipt_ttl, "receipt_ttl"),
        ft_dialect=ft_dialect,
        wait_replicas=replicas,
        wait_timeout_ms=positive_int(wait_timeout_ms, "wait_timeout_ms"),
        lexical_budget=positive_int(lexical_budget, "lexical_budget"),
    )
