"""Check every FT command the suite sends against the valkey-search 1.0 grammar.

``tests/conftest.py`` wraps the executors so each FT.* command is checked when sent;
a violation fails the test that sent it. Rules from shared/valkey-search-dialect.md,
and the query limits valkey-search 1.2 enforces (:func:`_limits`).

The library sends two RediSearch extensions, only after detecting RediSearch:
``HYBRID_POLICY`` inside a KNN clause, and a ``TEXT`` lexical field (index options
``NOOFFSETS NOFIELDS STOPWORDS 0``, searched by ``VERBATIM SCORER BM25`` text queries).
:func:`extensions` names those a command uses; :func:`check_command` checks the rest of
such a command against the 1.0 grammar, and rejects the extensions themselves when
``allow_extensions`` is false (a store in the baseline dialect, as on valkey-search).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_ALLOWED_COMMANDS = {"FT.CREATE", "FT.SEARCH", "FT.INFO", "FT.DROPINDEX", "FT._LIST"}
# FT.CONFIG is sent only as a capability probe whose error is expected on valkey-search.
_PROBES = {"FT.CONFIG"}
_FIELD_TYPES = {"NUMERIC", "TAG", "VECTOR"}
_KNN = re.compile(r"=>\[KNN (\d+) @(\w+) \$(\w+) AS (\w+)\]$")
_POLICY = re.compile(r" HYBRID_POLICY (BATCHES|ADHOC_BF)(?= AS )")
_TEXT_QUERY = re.compile(r"^(\(.*\)) @lex_text:\(([^\W_]+(\|[^\W_]+)*)\)$")
_CREATE_OPTIONS = ["NOOFFSETS", "NOFIELDS", "STOPWORDS", "0"]
_TEXT_FIELD = ["lex_text", "TEXT", "NOSTEM"]
_EXPONENT = re.compile(r"\d[eE][+-]?\d")


def _s(arg: object) -> str:
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


def check_create(args: list[str]) -> list[str]:
    problems = []
    index, rest = args[0], args[1:]
    if "{" in index or "}" in index:
        problems.append(f"index name {index!r} has a hash tag")
    if rest[:4] != ["ON", "HASH", "PREFIX", "1"] or rest[5] != "SCHEMA":
        problems.append(f"FT.CREATE options not in 1.0 order: {rest[:6]}")
    if "{" in rest[4] or "}" in rest[4]:
        problems.append("prefix has a hash tag")
    schema = rest[6:]
    i, vectors, attributes = 0, 0, 0
    while i < len(schema):
        kind = schema[i + 1]
        attributes += 1
        if kind not in _FIELD_TYPES:
            problems.append(f"field type {kind} not accepted by valkey-search 1.0")
            break
        if kind == "NUMERIC":
            i += 2
        elif kind == "TAG":
            i += 2
            while i < len(schema) and schema[i] in {"SEPARATOR", "CASESENSITIVE"}:
                i += 2 if schema[i] == "SEPARATOR" else 1
        else:
            vectors += 1
            algorithm, count = schema[i + 2], int(schema[i + 3])
            params = dict(
                zip(
                    schema[i + 4 : i + 4 + count : 2],
                    schema[i + 5 : i + 4 + count : 2],
                    strict=True,
                )
            )
            if algorithm not in {"HNSW", "FLAT"} or params.get("TYPE") != "FLOAT32":
                problems.append(f"vector field {algorithm} {params}")
            if params.get("DISTANCE_METRIC") not in {"COSINE", "IP", "L2"}:
                problems.append("bad distance metric")
            allowed = {
                "TYPE",
                "DIM",
                "DISTANCE_METRIC",
                "M",
                "EF_CONSTRUCTION",
                "EF_RUNTIME",
                "INITIAL_CAP",
            }
            if set(params) - allowed:
                problems.append(f"vector params not in 1.0: {set(params) - allowed}")
            i += 4 + count
    if "SORTABLE" in schema or "TEXT" in schema:
        problems.append("SORTABLE/TEXT are rejected by valkey-search 1.0")
    if vectors < 1:
        problems.append("valkey-search 1.0 needs a VECTOR field")
    if attributes > 50:
        problems.append("more than 50 attributes")
    return problems


def check_search(args: Sequence[object]) -> list[str]:
    problems = []
    query = _s(args[1])
    options = [_s(a) for a in args[2:]]
    match = _KNN.search(query)
    if match is None:
        return [f"query without a trailing KNN clause: {query!r}"]
    param = match.group(3)
    filter_part = query[: match.start()]
    problems += _limits(query, filter_part)
    if filter_part.strip() in {"", "*"} and filter_part.strip() != "*":
        problems.append("empty filter")
    for body in re.findall(r"\{([^}]*)\}", filter_part):
        if "|" in body:
            problems.append(f"tag OR inside braces is literal on 1.0: {{{body}}}")
        if "\\" in body:
            problems.append("backslash escapes do not work on valkey-search 1.0.2")
        if not re.fullmatch(r"[A-Za-z0-9_]+", body):
            problems.append(f"tag value needs escaping: {{{body}}}")
    ranges = re.findall(r"\[([^\]]*)\]", filter_part)  # numeric ranges only, not tag tokens
    if any(_EXPONENT.search(body) for body in ranges):
        problems.append("exponent notation in a numeric range")
    for banned in ("SORTBY", "WITHSCORES", "FILTER", "NOCONTENT", "INKEYS", "INFIELDS"):
        if banned in options:
            problems.append(f"{banned} not accepted by valkey-search 1.0")
    if "PARAMS" in options:
        at = options.index("PARAMS")
        count = int(options[at + 1])
        names = options[at + 2 : at + 2 + count : 2]
        unused = [n for n in names if f"${n}" not in query]
        if unused:
            problems.append(f"unused PARAMS {unused}")
        if param not in names:
            problems.append(f"query uses ${param} but PARAMS lacks it")
    else:
        problems.append("KNN query without PARAMS")
    if options[-2:] != ["DIALECT", "2"]:
        problems.append("must end with DIALECT 2")
    return problems


_MAX_QUERY_BYTES = 10240  # valkey-search >= 1.1: query-string-bytes
_MAX_QUERY_NODES = 1000  # valkey-search 1.2: query-string-terms-count


def _limits(query: str, filter_part: str) -> list[str]:
    """What valkey-search 1.2 refuses whatever the grammar: a query string over 10,240
    bytes, or more than 1,000 predicate nodes (each ``@f:`` clause, each AND or OR
    joining two)."""
    problems = []
    if len(query.encode("utf-8")) > _MAX_QUERY_BYTES:
        problems.append(f"query string of {len(query.encode())} bytes (> {_MAX_QUERY_BYTES})")
    nodes = 2 * filter_part.count("@") - 1
    if nodes > _MAX_QUERY_NODES:
        problems.append(f"query of {nodes} predicate nodes (> {_MAX_QUERY_NODES})")
    return problems


def extensions(args: Sequence[object]) -> list[str]:
    """The RediSearch extensions an FT command uses (see the module docstring)."""
    name = _s(args[0]).upper()
    found = []
    if name == "FT.CREATE":
        rest = [_s(a) for a in args[1:]]
        if rest[6:10] == _CREATE_OPTIONS:
            found.append("index options")
        if any(rest[i : i + 3] == _TEXT_FIELD for i in range(len(rest))):
            found.append("TEXT field")
    elif name == "FT.SEARCH":
        query = _s(args[2])
        if _POLICY.search(query):
            found.append("HYBRID_POLICY")
        if _TEXT_QUERY.match(query):
            found.append("text query")
    return found


def _without_extensions(args: Sequence[object]) -> list[object] | None:
    """The command with its extensions removed (1.0 grammar applies to the rest), or
    ``None`` for a text query (no 1.0 counterpart: checked on its own)."""
    name = _s(args[0]).upper()
    out = list(args)
    if name == "FT.CREATE":
        rest = [_s(a) for a in args]
        if rest[7:11] == _CREATE_OPTIONS:
            del out[7:11]
        text_at = [i for i in range(len(out)) if [_s(a) for a in out[i : i + 3]] == _TEXT_FIELD]
        for i in reversed(text_at):
            del out[i : i + 3]
        # The index still needs a vector field and the lexical vector is absent: fine.
    elif name == "FT.SEARCH":
        query = _s(args[2])
        if _TEXT_QUERY.match(query):
            return None
        out[2] = _POLICY.sub("", query)
    return out


def _check_text_query(args: Sequence[object]) -> list[str]:
    options = [_s(a) for a in args[3:]]
    match = _TEXT_QUERY.match(_s(args[2]))
    assert match is not None
    problems = _limits(_s(args[2]), match.group(1))
    for body in re.findall(r"\{([^}]*)\}", match.group(1)):
        if not re.fullmatch(r"[A-Za-z0-9_]+", body):
            problems.append(f"tag value needs escaping: {{{body}}}")
    if options[:3] != ["VERBATIM", "SCORER", "BM25"] or options[-2:] != ["DIALECT", "2"]:
        problems.append(f"unexpected text query options {options[:3]}")
    return problems


def check_command(args: Sequence[object], *, allow_extensions: bool = True) -> list[str]:
    """Problems of one command under the valkey-search 1.0.2 dialect (empty when fine);
    the RediSearch extensions the library uses pass when ``allow_extensions``."""
    used = extensions(args)
    if used:
        if not allow_extensions:
            return [f"RediSearch extension {e} sent in the baseline dialect" for e in used]
        stripped = _without_extensions(args)
        return _check_text_query(args) if stripped is None else _check_base(stripped)
    return _check_base(args)


def _check_base(args: Sequence[object]) -> list[str]:
    name = _s(args[0]).upper()
    if not name.startswith("FT."):
        return []
    if name in _PROBES:
        return []
    if name not in _ALLOWED_COMMANDS:
        return [f"{name} does not exist in valkey-search 1.0"]
    rest = [_s(a) for a in args[1:]]
    if name == "FT.CREATE":
        return check_create(rest)
    if name == "FT.SEARCH":
        return check_search(list(args[1:]))
    if name == "FT.DROPINDEX" and "DD" in rest:
        return ["FT.DROPINDEX DD is not supported"]
    return []
