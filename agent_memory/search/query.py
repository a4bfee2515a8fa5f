"""Build FT.CREATE / FT.SEARCH argument lists.

By default every command is valid for valkey-search 1.0.2 (see
valkey-search-dialect.md): options in the order ``ON HASH PREFIX 1 <prefix> SCHEMA``; no
TEXT, SORTABLE, FLOAT64; every query carries ``=>[KNN ...]`` with ``AS <alias>``; tag OR
is written as ``(@t:{a} | @t:{b})``; numbers in plain decimal; only PARAMS the query
uses; ``DIALECT 2``. Two RediSearch features are emitted only when the caller asks for
them (after detecting the server, :mod:`agent_memory.search.dialect`): the lexical
channel as a ``TEXT`` field searched with BM25 (:func:`text_search_args`) and a
``HYBRID_POLICY`` for filtered KNN queries.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from agent_memory.schema.encoding import NO_NAMESPACE_TOKEN, is_token
from agent_memory.schema.filters import MemoryFilter
from agent_memory.schema.layout import (
    DISTANCE_ALIAS,
    F_AGENT,
    F_CREATED,
    F_EXPIRES,
    F_IMPORTANCE,
    F_LABELS,
    F_LEX,
    F_LEX_TERMS,
    F_LEX_TEXT,
    F_NAMESPACE,
    F_SESSION,
    F_SESSION_VECTOR,
    F_SOURCE,
    F_TAGS,
    F_THREAD,
    F_VECTOR,
    TAG_SEPARATOR,
)

VECTOR_PARAM = "vec"
LEX_PARAM = "lexq"
LEX_DISTANCE_ALIAS = "__ldist"

MAX_QUERY_BYTES = 8192
"""The longest query string the library sends. valkey-search from 1.1 refuses one over
10,240 bytes ("Query string is too long", its ``query-string-bytes`` default); 1.2 also
refuses a query of more than 1,000 predicate nodes (``query-string-terms-count``: each
``@f:{v}`` and each AND or OR joining two is one) or nested deeper than 1,000 levels
(``query-string-depth``: each ``|`` nests one), which the library's queries stay far
from (:func:`query_nodes`: a recall's at most 64 tags, its label tokens of 34 characters
and its term clauses within these bytes make at most ~520 nodes and ~110 levels).
RediSearch and valkey-search 1.0 have no such limits; valkey-search 1.1.0-1.1.1 count
at most 16 nodes by default, which a hybrid recall of a few terms already exceeds.
Split three ways: the filter (:data:`MAX_FILTER_BYTES`), the lexical term clauses
(:data:`MAX_TERM_BYTES`) and the KNN clause."""

MAX_TERM_BYTES = 3072
"""Bytes of the lexical term clauses of one query (:func:`term_clause_bytes` each): the
query's rarest terms that fit bring the lexical candidates
(:func:`agent_memory.schema.term_choice.candidate_terms`), about a hundred; every
query term still counts in the candidates' BM25."""

_KNN_CLAUSE_BYTES = 128  # "=>[KNN 1000 @svec $vec HYBRID_POLICY ADHOC_BF AS __dist]", joins

MAX_FILTER_BYTES = MAX_QUERY_BYTES - MAX_TERM_BYTES - _KNN_CLAUSE_BYTES
"""Bytes of a query's filter (:func:`filter_expression`: scope, tags, labels): a recall
whose filter is longer is refused before anything is sent."""

TERM_CLAUSE_BYTES = len(f" | @{F_LEX_TERMS}:{{t{'0' * 12}}}")  # lexical.term_token: t + 12 hex
"""The bytes a term adds to the vector form's lexical query (its token clause, ``|``)."""


def term_clause_bytes(term: str, *, text_form: bool = False) -> int:
    """The bytes ``term`` adds to a lexical query: its ``lex_terms`` token clause and
    the ``|`` joining it (vector form), or the term itself and its ``|`` (the ``TEXT``
    form's ``@lex_text:(a|b)``)."""
    return len(term.encode("utf-8", "surrogatepass")) + 1 if text_form else TERM_CLAUSE_BYTES


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


def create_index_args(
    index: str, prefix: str, spec: VectorIndexSpec, *, native_text: bool = False
) -> list[str]:
    """Arguments of ``FT.CREATE`` for the memory index (after the command name).

    ``vector`` is the embedding (HNSW, cosine), ``svec`` the embedding of session-scoped
    memories again (``FLAT``: searched exactly among a session's few memories, which an
    HNSW search would find only by walking most of the graph). The lexical channel is either ``lex``,
    the hashed term vector of the content (``FLAT``, inner product: exact, and valid on
    valkey-search 1.0.2) with ``lex_terms``, a TAG of its terms' tokens that restricts
    that exact scan to the memories holding a query's rarest terms, or, with ``native_text`` (RediSearch only), ``lex_text``: the
    analysed terms of the content as a ``TEXT`` field without stemming, stopwords or
    offsets, so the server's BM25 ranks exactly the library's terms. Tags and the
    numeric fields the BetterDB TypeScript library filters on (``importance``,
    ``created_at``) complete the schema; per-read counters are not indexed.
    """
    options = ["NOOFFSETS", "NOFIELDS", "STOPWORDS", "0"] if native_text else []
    schema = [
        arg for name, kind, params in _schema(spec, native_text) for arg in (name, kind, *params)
    ]
    return [index, "ON", "HASH", "PREFIX", "1", prefix, *options, "SCHEMA", *schema]


def _schema(spec: VectorIndexSpec, native_text: bool) -> list[tuple[str, str, list[str]]]:
    """The index's attributes: (name, type, the arguments after the type)."""
    vector_params = ["TYPE", "FLOAT32", "DIM", str(spec.dim), "DISTANCE_METRIC", spec.metric]
    if spec.algorithm == "HNSW":
        vector_params += [
            "M", str(spec.m),
            "EF_CONSTRUCTION", str(spec.ef_construction),
            "EF_RUNTIME", str(spec.ef_runtime),
        ]  # fmt: skip
    tag = ["CASESENSITIVE"]
    listed = ["SEPARATOR", TAG_SEPARATOR, "CASESENSITIVE"]
    lexical: list[tuple[str, str, list[str]]]
    if native_text:
        lexical = [(F_LEX_TEXT, "TEXT", ["NOSTEM"])]
    else:
        lex_params = ["TYPE", "FLOAT32", "DIM", str(spec.lexical_dim), "DISTANCE_METRIC", "IP"]
        lexical = [
            (F_LEX, "VECTOR", ["FLAT", str(len(lex_params)), *lex_params]),
            (F_LEX_TERMS, "TAG", listed),
        ]
    session_params = ["TYPE", "FLOAT32", "DIM", str(spec.dim), "DISTANCE_METRIC", spec.metric]
    return [
        (F_VECTOR, "VECTOR", [spec.algorithm, str(len(vector_params)), *vector_params]),
        (F_SESSION_VECTOR, "VECTOR", ["FLAT", str(len(session_params)), *session_params]),
        *lexical,
        (F_NAMESPACE, "TAG", tag),
        (F_SESSION, "TAG", tag),
        (F_AGENT, "TAG", tag),
        (F_THREAD, "TAG", tag),
        (F_TAGS, "TAG", listed),
        (F_SOURCE, "TAG", tag),
        (F_LABELS, "TAG", listed),
        (F_IMPORTANCE, "NUMERIC", []),
        (F_CREATED, "NUMERIC", []),
        (F_EXPIRES, "NUMERIC", []),
    ]


def index_field_types(spec: VectorIndexSpec, *, native_text: bool = False) -> dict[str, str]:
    """Each attribute :func:`create_index_args` gives the index, with its type as
    ``FT.INFO`` lists it: ``{"session": "TAG", ...}`` (pure)."""
    return {name: kind for name, kind, _ in _schema(spec, native_text)}


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


@lru_cache(maxsize=1024)
def filter_expression(flt: MemoryFilter) -> str:
    """The pre-filter of a KNN query; always non-empty (it names the namespace).
    Memoised: a store's recalls repeat a few scopes, and the filter is immutable."""
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


def filter_bytes(flt: MemoryFilter) -> int:
    """The length of the filter's query text (ASCII: tokens are ``[A-Za-z0-9_]``)."""
    return len(filter_expression(flt))


def query_nodes(where: str) -> int:
    """The predicate nodes valkey-search 1.2 counts in a filter (at most): one per
    ``@field:`` clause and one per AND or OR joining two."""
    return max(2 * where.count("@") - 1, 0)


MAX_QUERY_NODES = 1000
"""valkey-search 1.2's ``query-string-terms-count`` default."""


def _checked(where: str, rest: str) -> str:
    """``where + rest``, refused (a bug of the caller: its bounds keep every query within)
    when the server would refuse it."""
    query = where + rest
    size, nodes = len(query.encode("utf-8")), query_nodes(where)
    if size > MAX_QUERY_BYTES or nodes > MAX_QUERY_NODES:
        raise ValueError(
            f"refusing to send a query of {size} bytes and {nodes} nodes "
            f"(at most {MAX_QUERY_BYTES} and {MAX_QUERY_NODES})"
        )
    return query


def knn_search_args(
    index: str,
    flt: MemoryFilter,
    k: int,
    vector_blob: bytes,
    return_fields: Sequence[str],
    *,
    lexical: bool = False,
    term_tokens: Sequence[str] = (),
    hybrid_policy: str | None = None,
    session_pool: bool = False,
) -> list[str | bytes]:
    """Arguments of ``FT.SEARCH`` for a filtered KNN query returning ``return_fields``.

    With ``lexical`` the KNN runs over the ``lex`` field (inner product with a hashed
    query, distance alias ``__ldist``) instead of the embedding, among the memories
    holding any of ``term_tokens`` (:func:`~agent_memory.schema.lexical.term_token`;
    none: the whole filter, a scan of every memory it selects). ``session_pool``: the
    filter selects one session's memories, searched in their FLAT field ``svec``.
    ``hybrid_policy``
    (``"BATCHES"`` or ``"ADHOC_BF"``, RediSearch only) fixes how the filter and the
    vector search combine.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    field, param, alias = (
        (F_LEX, LEX_PARAM, LEX_DISTANCE_ALIAS)
        if lexical
        else (F_SESSION_VECTOR if session_pool else F_VECTOR, VECTOR_PARAM, DISTANCE_ALIAS)
    )
    policy = f" HYBRID_POLICY {hybrid_policy}" if hybrid_policy else ""
    where = filter_expression(flt)
    if term_tokens:
        where = f"({where[1:-1]} {_any_of(F_LEX_TERMS, term_tokens)})"
    query = _checked(where, f"=>[KNN {k} @{field} ${param}{policy} AS {alias}]")
    fields = [*return_fields, alias]
    return [
        index, query,
        "PARAMS", "2", param, vector_blob,
        "RETURN", str(len(fields)), *fields,
        "LIMIT", "0", str(k),
        "DIALECT", "2",
    ]  # fmt: skip


_UNIT_FLOAT32 = struct.pack("<f", 1.0)  # a unit vector's first component (cosine needs a norm)


def settle_search_args(index: str, dim: int) -> list[str | bytes]:
    """Arguments of an ``FT.SEARCH`` that matches nothing (a namespace no memory has,
    no documents returned): sent after script writes on servers that index such writes
    only at a search (:attr:`~agent_memory.search.dialect.Dialect.defers_script_writes`).
    A KNN query, the only kind valkey-search 1.0 accepts."""
    where = _tag(F_NAMESPACE, NO_NAMESPACE_TOKEN)
    return [
        index, f"({where})=>[KNN 1 @{F_VECTOR} ${VECTOR_PARAM} AS {DISTANCE_ALIAS}]",
        "PARAMS", "2", VECTOR_PARAM, _UNIT_FLOAT32 + bytes(4 * (dim - 1)),
        "LIMIT", "0", "0",
        "DIALECT", "2",
    ]  # fmt: skip


def text_search_args(
    index: str, flt: MemoryFilter, terms: Sequence[str], k: int, return_fields: Sequence[str]
) -> list[str]:
    """Arguments of ``FT.SEARCH`` for the lexical channel on a ``TEXT`` field (RediSearch):
    the filtered memories containing any of ``terms``, best BM25 first.

    ``terms`` are analysed terms (:func:`agent_memory.schema.lexical.analyze`): Unicode
    letters and digits only, so they need no escaping in the query syntax.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    if not terms:
        raise ValueError("a text search needs at least one term")
    for term in terms:
        if not term or not all(c.isalnum() for c in term):
            raise ValueError(f"refusing to put an unanalysed term into a text query: {term!r}")
    query = _checked(filter_expression(flt), f" @{F_LEX_TEXT}:({'|'.join(terms)})")
    return [
        index, query,
        "VERBATIM",
        "SCORER", "BM25",
        "RETURN", str(len(return_fields)), *return_fields,
        "LIMIT", "0", str(k),
        "DIALECT", "2",
    ]  # fmt: skip
