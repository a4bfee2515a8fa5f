"""The query strings the library builds stay within what valkey-search 1.2 accepts
(10,240 bytes, 1,000 predicate nodes), whatever the query's length and whatever filter
a recall admits (pure: no server; the store tests send the same on every server)."""

from __future__ import annotations

import numpy as np
import pytest

from agent_memory.errors import InvalidInputError
from agent_memory.schema.filters import MemoryFilter
from agent_memory.schema.labels import check_labels, filter_groups
from agent_memory.schema.lexical import analyze, term_token
from agent_memory.schema.term_choice import candidate_terms
from agent_memory.schema.types import Scope
from agent_memory.search.query import (
    MAX_FILTER_BYTES,
    MAX_QUERY_BYTES,
    MAX_TERM_BYTES,
    TERM_CLAUSE_BYTES,
    filter_bytes,
    knn_search_args,
    query_nodes,
    term_clause_bytes,
    text_search_args,
)
from agent_memory.store.ops.recall import _filters
from agent_memory.store.validation import MAX_TAGS
from tests.dialect_audit import check_command

BLOB = np.zeros(4, dtype="<f4").tobytes()
LONGEST = "x" * 64  # the longest token: a plain value of 64 characters (longer: a digest)
WIDEST_SCOPE = Scope(namespace=LONGEST, agent_id=LONGEST, thread_id=LONGEST, session_id=LONGEST)
LONGEST_TAGS = tuple(f"{i:02d}" + "y" * 62 for i in range(MAX_TAGS))  # of 64 characters


def _terms(n: int) -> list[str]:
    return [f"qqq{i:04d}" for i in range(n)]  # seven letters, as in a real sentence


def _vector_terms(terms: list[str]) -> tuple[str, ...]:
    """The terms a recall sends, in a namespace where each is free (the old failure)."""
    return candidate_terms(terms, {}, 200, 10, size=TERM_CLAUSE_BYTES, room=MAX_TERM_BYTES)


def _knn(flt: MemoryFilter, terms: tuple[str, ...], **kwargs: object) -> list[object]:
    args = knn_search_args(
        "i", flt, 1000, BLOB, ["content"], term_tokens=[term_token(t) for t in terms],
        lexical=bool(terms), **kwargs,  # type: ignore[arg-type]
    )  # fmt: skip
    return ["FT.SEARCH", *args]


def test_any_scope_and_64_tags_fit_the_filter_bound() -> None:
    """What lets a recall without labels skip the filter's measure."""
    flts = _filters(WIDEST_SCOPE, LONGEST_TAGS, {})
    assert len(flts) == 2 and max(filter_bytes(f) for f in flts) <= MAX_FILTER_BYTES


def test_a_long_query_sends_its_rarest_terms_within_the_bound() -> None:
    """Before, a 500-term query in a small namespace sent 500 clauses (14.5 KB)."""
    chosen = _vector_terms(_terms(500))
    assert len(chosen) == MAX_TERM_BYTES // term_clause_bytes("x") == 105
    for flt in _filters(WIDEST_SCOPE, LONGEST_TAGS, {}):
        for policy in (None, "ADHOC_BF"):
            cmd = _knn(flt, chosen, hybrid_policy=policy)
            query = str(cmd[2])
            assert len(query.encode()) <= MAX_QUERY_BYTES < 10240
            assert check_command(cmd) == []  # the 1.0 grammar and the 1.2 limits
        semantic = _knn(flt, (), session_pool=True)
        assert check_command(semantic) == []


def test_label_filters_up_to_the_bound_stay_under_the_node_limit() -> None:
    """Labels are 34-character digests: the most label values a filter admits, with
    a full term room, make far fewer than 1,000 nodes."""
    scope = Scope(namespace="acme", agent_id="agent one", thread_id="thread/1")
    labels = check_labels({f"k{i}": [f"v {j}" for j in range(7)] for i in range(14)}, None)
    (flt,) = _filters(scope, (), labels)
    assert filter_bytes(flt) <= MAX_FILTER_BYTES
    cmd = _knn(flt, _vector_terms(_terms(500)))
    query = str(cmd[2])
    assert query_nodes(query[: query.index("=>")]) < 700
    assert check_command(cmd) == []


def test_the_widest_label_filter_a_memory_may_carry_is_refused() -> None:
    widest = check_labels({f"k{i}": [f"v {j}" for j in range(16)] for i in range(16)}, None)
    with pytest.raises(InvalidInputError) as refused:
        _filters(Scope(), (), widest)
    assert refused.value.field == "labels"
    # and the builder never sends such a filter, whoever built it
    flt = MemoryFilter(namespace="_d", label_groups=filter_groups(widest))
    assert filter_bytes(flt) > 10240
    with pytest.raises(ValueError, match="refusing to send"):
        knn_search_args("i", flt, 10, BLOB, ["content"])


def test_text_form_terms_of_any_script_fit_the_bound() -> None:
    """The TEXT form sends the terms themselves: 64 letters of three UTF-8 bytes each."""
    terms = sorted({t for i in range(300) for t in analyze(chr(0x4E00 + i) * 70)})
    assert len(terms) == 300 and len(terms[0].encode()) == 192

    def size(term: str) -> int:
        return term_clause_bytes(term, text_form=True)

    chosen = candidate_terms(terms, {}, 200, 10, size=size, room=MAX_TERM_BYTES)
    assert 0 < len(chosen) < len(terms)
    for flt in _filters(WIDEST_SCOPE, LONGEST_TAGS, {}):
        args = text_search_args("i", flt, chosen, 1000, ["content"])
        assert len(args[1].encode()) <= MAX_QUERY_BYTES
    plain = candidate_terms(_terms(900), {}, 200, 10, size=size, room=MAX_TERM_BYTES)
    assert len(plain) == MAX_TERM_BYTES // 8 == 384  # words of 7 letters: hundreds fit
