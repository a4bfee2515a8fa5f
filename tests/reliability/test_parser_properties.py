"""Property tests: arbitrary RESP-shaped replies never crash a parser with anything but
the library's own errors (``ReplyParseError``; ``OperationTimeoutError`` for the
valkey-search 1.0 "Request timed out" string)."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agent_memory.core import replies
from agent_memory.errors import OperationTimeoutError, ReplyParseError
from agent_memory.schema import layout as L
from agent_memory.schema.records import parse_item
from agent_memory.search.dialect import classify, search_module_version
from agent_memory.search.parse import parse_index_info, parse_search_reply

ALLOWED = (ReplyParseError, OperationTimeoutError)

_KEYWORDS = st.sampled_from(
    [
        "total_results", "results", "id", "extra_attributes", "values", "num_docs",
        "dimensions", "dim", "distance_metric", "indexing", "hash_indexing_failures",
        "name", "ver", "search", "content", "__dist", "Request timed out",
        L.F_CONTENT, L.F_SCOPE_RAW, L.F_TAGS_RAW, L.F_TAGS, L.F_IMPORTANCE, L.F_CREATED,
        L.F_ACCESSED, L.F_ACCESS_COUNT, L.F_EXPIRES, L.F_METADATA, L.F_SESSION,
        L.F_NAMESPACE, L.F_AGENT, L.F_THREAD, "nan", "inf", "-inf", "1e999", "{}", "[]",
        '{"namespace": 5}', '{"agent_id": null, "bogus": 1}', '["a", 1, null]', "1.5",
    ]
)  # fmt: skip
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.binary(max_size=12),
    _KEYWORDS,
    _KEYWORDS.map(str.encode),
)
RESP = st.recursive(
    _SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=6),
        st.lists(children, max_size=6).map(tuple),
        st.dictionaries(
            st.one_of(_KEYWORDS, st.text(max_size=6), st.binary(max_size=6)), children, max_size=5
        ),
    ),
    max_leaves=25,
)
FIELD_MAPS = st.dictionaries(
    st.sampled_from(list(L.ITEM_FIELDS)), st.one_of(_SCALARS, RESP), max_size=len(L.ITEM_FIELDS)
)

PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _only_library_errors(fn: Any, *args: Any) -> Any:
    try:
        return fn(*args)
    except ALLOWED:
        return None


@PROPERTY
@given(RESP)
@example([1, "k", {"f": float("nan")}])
@example({"results": [{"id": None}]})
@example({"results": 5})
@example({"results": [{"id": "k", "extra_attributes": 3}]})
@example([True, b"\xff"])
@example(["1e999"])
def test_parse_search_reply(reply: Any) -> None:
    parsed = _only_library_errors(parse_search_reply, reply)
    if parsed is not None:
        assert isinstance(parsed.total, int)
        for doc in parsed.documents:
            assert isinstance(doc.key, str)
            assert all(isinstance(k, str) for k in doc.fields)


@PROPERTY
@given(RESP)
@example(["num_docs", "1e999"])
@example(["num_docs", "nan"])
@example({"num_docs": [1, 2]})
@example(["num_docs", 1, "dimensions", None, "distance_metric", [1]])
@example(["num_docs", 1, "indexing", "inf"])
def test_parse_index_info(reply: Any) -> None:
    info = _only_library_errors(parse_index_info, reply)
    if info is not None:
        assert isinstance(info.num_docs, int) and isinstance(info.indexing, bool)


@PROPERTY
@given(RESP, st.booleans(), st.booleans())
@example([{"name": "search", "ver": "nan"}], True, False)
@example([{"name": "search", "ver": "1e999"}], True, True)
@example([{"name": "search", "ver": -1}], False, False)
@example([["name", "search", "ver"]], False, False)
@example([{"name": None}], False, False)
def test_classify(module_list: Any, ft_list_ok: bool, ft_config_ok: bool) -> None:
    dialect = _only_library_errors(classify, module_list, ft_list_ok, ft_config_ok)
    if dialect is not None:
        assert dialect.family in {"none", "valkey-search", "redisearch"}
        assert all(isinstance(p, int) and p >= 0 for p in dialect.version)
    _only_library_errors(search_module_version, module_list)


@PROPERTY
@given(RESP)
@example(float("inf"))
@example("1e999")
@example(b"\xff")
@example(math.nan)
@example("-inf")
def test_reply_helpers(value: Any) -> None:
    text = _only_library_errors(replies.text, value)
    assert text is None or isinstance(text, str)
    _only_library_errors(replies.optional_text, value)
    _only_library_errors(replies.raw_bytes, value)
    integer = _only_library_errors(replies.integer, value)
    assert integer is None or isinstance(integer, int)
    number = _only_library_errors(replies.number, value)
    assert number is None or (isinstance(number, float) and not math.isnan(number))
    pairs = _only_library_errors(replies.pairs, value)
    assert pairs is None or all(isinstance(k, str) for k in pairs)


@PROPERTY
@given(FIELD_MAPS)
@example({L.F_CONTENT: "c", L.F_SCOPE_RAW: '{"namespace": 5}'})
@example({L.F_CONTENT: "c", L.F_SCOPE_RAW: '{"namespace": ""}'})
@example({L.F_CONTENT: "c", L.F_SCOPE_RAW: '{"agent_id": "x", "thread_id": "' + "t" * 600 + '"}'})
@example({L.F_CONTENT: "c", L.F_TAGS_RAW: '"not a list"', L.F_TAGS: 5})
@example({L.F_CONTENT: "c", L.F_IMPORTANCE: "inf", L.F_CREATED: "1e999"})
@example({L.F_CONTENT: "c", L.F_IMPORTANCE: "-inf"})
@example({L.F_CONTENT: "c", L.F_IMPORTANCE: float("inf")})
@example({L.F_CONTENT: "c", L.F_METADATA: "[1, 2]", L.F_EXPIRES: b"\xff"})
@example({L.F_CONTENT: [1], L.F_NAMESPACE: {"x": 1}})
@example({L.F_CONTENT: "c", L.F_SCOPE_RAW: "[1]", L.F_NAMESPACE: ""})
def test_parse_item(fields: dict[str, Any]) -> None:
    item = _only_library_errors(parse_item, "id1", fields)
    if item is not None:
        assert isinstance(item.content, str)
        assert isinstance(item.importance, float) and math.isfinite(item.importance)
        assert all(isinstance(t, str) for t in item.tags)
        assert isinstance(item.metadata, dict)
