"""Check every FT command the suite sends against the valkey-search 1.0 grammar.

``tests/conftest.py`` wraps the executors so each FT.* command is checked when sent;
a violation fails the test that sent it. Rules from shared/valkey-search-dialect.md.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_ALLOWED_COMMANDS = {"FT.CREATE", "FT.SEARCH", "FT.INFO", "FT.DROPINDEX", "FT._LIST"}
# FT.CONFIG is sent only as a capability probe whose error is expected on valkey-search.
_PROBES = {"FT.CONFIG"}
_FIELD_TYPES = {"NUMERIC", "TAG", "VECTOR"}
_KNN = re.compile(r"=>\[KNN (\d+) @(\w+) \$(\w+) AS (\w+)\]$")
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


def check_command(args: Sequence[object]) -> list[str]:
    """Problems of one command under the valkey-search 1.0.2 dialect (empty when fine)."""
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
