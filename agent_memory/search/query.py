"""Build FT.CREATE / FT.SEARCH argument lists valid for valkey-search 1.0.2.

Rules kept here (see valkey-search-dialect.md): options in the order
``ON HASH PREFIX 1 <prefix> SCHEMA``; no TEXT, SORTABLE, FLOAT64; every query carries
``=>[KNN ...]`` with ``AS <alias>``; tag OR is written as ``(@t:{a} | @t:{b})``; numbers
in plain decimal; only PARAMS the query uses; ``DIALECT 2``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from agent_memory.search.encoding import is_token
from agent_memory.store.filters import MemoryFilter
from agent_memory.store.layout import (
    DISTANCE_ALIAS,
    F_ACCESS_COUNT,
    F_ACCESSED,
    F_AGENT,
    F_CREATED,
    F_EXPIRES,
    F_IMPORTANCE,
    F_LABELS,
    F_LEX,
    F_NAMESPACE,
    F_SESSION,
    F_SOURCE,
    F_TAGS,
    F_THREAD,
    F_VECTOR,
    TAG_SEPARATOR,
)

VECTOR_PARAM = "vec"
LEX_PARAM = "lexq"
LEX_DISTANCE_ALIAS = "__ldist"


@dataclass(frozen=True, slots=True)
class VectorIndexSpec:
    """Shape of the vector field."""

    dim: int
    metric: str = "COSINE"
    algorithm: str = "HNSW"
    m: int = 16
    ef_construction: int = 200
    ef_runtime: int = 10
    lexical_dim: int = 256  # the ``lex`` field: FLAT (exact), inner product


def create_index_args(index: str, prefix: str, spec: VectorIndexSpec) -> list[str]:
    """Arguments of ``FT.CREATE`` for the memory index (after the command name).

    Two VECTOR fields: ``vector`` (the embedding, cosine) and ``lex`` (hashed term
    vector of the content, ``FLAT`` so the lexical search is exact and identical to the
    portable backend's, ``IP``). Both are valid on valkey-search 1.0.2.
    """
    vector_params = ["TYPE", "FLOAT32", "DIM", str(spec.dim), "DISTANCE_METRIC", spec.metric]
    if spec.algorithm == "HNSW":
        vector_params += [
            "M", str(spec.m),
            "EF_CONSTRUCTION", str(spec.ef_construction),
            "EF_RUNTIME", str(spec.ef_runtime),
        ]  # fmt: skip
    tag = ["TAG", "CASESENSITIVE"]
    return [
        index, "ON", "HASH", "PREFIX", "1", prefix, "SCHEMA",
        F_VECTOR, "VECTOR", spec.algorithm, str(len(vector_params)), *vector_params,
        F_LEX, "VECTOR", "FLAT", "6",
        "TYPE", "FLOAT32", "DIM", str(spec.lexical_dim), "DISTANCE_METRIC", "IP",
        F_NAMESPACE, *tag,
        F_SESSION, *tag,
        F_AGENT, *tag,
        F_THREAD, *tag,
        F_TAGS, "TAG", "SEPARATOR", TAG_SEPARATOR, "CASESENSITIVE",
        F_SOURCE, *tag,
        F_LABELS, "TAG", "SEPARATOR", TAG_SEPARATOR, "CASESENSITIVE",
        F_IMPORTANCE, "NUMERIC",
        F_CREATED, "NUMERIC",
        F_ACCESSED, "NUMERIC",
        F_ACCESS_COUNT, "NUMERIC",
        F_EXPIRES, "NUMERIC",
    ]  # fmt: skip


def decimal(value: float) -> str:
    """A number in plain decimal notation (no exponent: valkey-search < 1.2.1)."""
    if not math.isfinite(value):
        return "+inf" if value > 0 else "-inf"
    if float(value).is_integer():
        return str(int(value))
    text = f"{value:.12f}".rstrip("0")
    return text.rstrip(".") if text.endswith(".") else text


def _tag(field: str, token: str) -> str:
    if not is_token(token):
        raise ValueError(f"refusing to put an unencoded value into a TAG query: {token!r}")
    return f"@{field}:{{{token}}}"


def _any_of(field: str, tokens: Sequence[str]) -> str:
    clauses = [_tag(field, t) for t in tokens]
    return clauses[0] if len(clauses) == 1 else "(" + " | ".join(clauses) + ")"


def filter_expression(flt: MemoryFilter) -> str:
    """The pre-filter of a KNN query; always non-empty (it names the namespace)."""
    clauses = [_tag(F_NAMESPACE, flt.namespace)]
    if flt.session is not None:
        clauses.append(_tag(F_SESSION, flt.session))
    if flt.agent is not None:
        clauses.append(_tag(F_AGENT, flt.agent))
    if flt.thread is not None:
        clauses.append(_tag(F_THREAD, flt.thread))
    clauses.extend(_tag(F_TAGS, t) for t in flt.tags)
    clauses.extend(_any_of(F_LABELS, group) for group in flt.label_groups if group)
    if flt.sources:
        clauses.append(_any_of(F_SOURCE, flt.sources))
    clauses.extend("-" + _tag(F_SOURCE, s) for s in flt.exclude_sources)
    return "(" + " ".join(clauses) + ")"


def knn_search_args(
    index: str,
    flt: MemoryFilter,
    k: int,
    vector_blob: bytes,
    return_fields: Sequence[str],
    *,
    lexical: bool = False,
) -> list[str | bytes]:
    """Arguments of ``FT.SEARCH`` for a filtered KNN query returning ``return_fields``.

    With ``lexical`` the KNN runs over the ``lex`` field (inner product with a hashed
    query, distance alias ``__ldist``) instead of the embedding.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    field, param, alias = (
        (F_LEX, LEX_PARAM, LEX_DISTANCE_ALIAS)
        if lexical
        else (F_VECTOR, VECTOR_PARAM, DISTANCE_ALIAS)
    )
    query = f"{filter_expression(flt)}=>[KNN {k} @{field} ${param} AS {alias}]"
    fields = [*return_fields, alias]
    return [
        index, query,
        "PARAMS", "2", param, vector_blob,
        "RETURN", str(len(fields)), *fields,
        "LIMIT", "0", str(k),
        "DIALECT", "2",
    ]  # fmt: skip
