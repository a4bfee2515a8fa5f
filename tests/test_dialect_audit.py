"""The dialect audit itself catches what valkey-search 1.0.2 rejects."""

from __future__ import annotations

import numpy as np
import pytest

from agent_memory.schema.filters import MemoryFilter
from agent_memory.search.dialect import classify
from agent_memory.search.query import VectorIndexSpec, create_index_args, knn_search_args
from tests.dialect_audit import check_command

BLOB = np.zeros(4, dtype="<f4").tobytes()


def _search(query: str, *extra: str) -> list[object]:
    return ["FT.SEARCH", "idx", query, "PARAMS", "2", "vec", BLOB, *extra, "DIALECT", "2"]


def test_our_own_commands_pass() -> None:
    create = ["FT.CREATE", *create_index_args("n:mem:idx", "n:mem:", VectorIndexSpec(dim=4))]
    assert check_command(create) == []
    flt = MemoryFilter(
        namespace="_d", session="_s", agent="a", tags=("x", "_hab"), sources=("fact", "summary")
    )
    assert check_command(["FT.SEARCH", *knn_search_args("i", flt, 5, BLOB, ["content"])]) == []


def test_rejections() -> None:
    knn = "=>[KNN 5 @vector $vec AS d]"
    assert check_command(_search("(@t:{a|b})" + knn))
    assert check_command(_search("(@t:{a\\ b})" + knn))
    assert check_command(_search("(@n:[1e3 +inf])" + knn))
    assert check_command(_search("(@t:{a})"))  # no KNN: pure filter query
    assert check_command(_search("(@t:{a})" + knn, "SORTBY", "x"))
    assert check_command(
        ["FT.SEARCH", "idx", "(@t:{a})" + knn, "PARAMS", "4", "vec", BLOB, "x", "1", "DIALECT", "2"]
    )
    assert check_command(
        [
            "FT.CREATE",
            "i",
            "ON",
            "HASH",
            "PREFIX",
            "1",
            "p:",
            "SCHEMA",
            "c",
            "TEXT",
            "v",
            "VECTOR",
            "HNSW",
            "6",
            "TYPE",
            "FLOAT32",
            "DIM",
            "4",
            "DISTANCE_METRIC",
            "COSINE",
        ]
    )
    assert check_command(
        [
            "FT.CREATE",
            "{i}",
            "ON",
            "HASH",
            "PREFIX",
            "1",
            "p:",
            "SCHEMA",
            "v",
            "VECTOR",
            "HNSW",
            "6",
            "TYPE",
            "FLOAT32",
            "DIM",
            "4",
            "DISTANCE_METRIC",
            "COSINE",
        ]
    )
    assert check_command(["FT.DROPINDEX", "i", "DD"])
    assert check_command(["FT.AGGREGATE", "i", "*"])


@pytest.mark.parametrize(
    ("raw", "ft_config_ok", "family", "version"),
    [
        (10000, False, "valkey-search", (1, 0, 0)),  # what valkey-search 1.0.2 reports
        (66049, False, "valkey-search", (1, 2, 1)),  # 1.2.1: (major<<16)|(minor<<8)|patch
        (65792, False, "valkey-search", (1, 1, 0)),
        (21005, True, "redisearch", (2, 10, 5)),
    ],
)
def test_module_versions_as_the_real_servers_report_them(
    raw: int, ft_config_ok: bool, family: str, version: tuple[int, int, int]
) -> None:
    dialect = classify([{"name": "search", "ver": raw}], ft_list_ok=True, ft_config_ok=ft_config_ok)
    assert (dialect.family, dialect.version) == (family, version)


def test_queries_valkey_search_1_2_refuses_for_their_size() -> None:
    knn = "=>[KNN 5 @vector $vec AS d]"
    clause = "@lex_terms:{t0123456789ab}"
    long = "(" + " | ".join([clause] * 360) + ")"  # 10,438 bytes
    assert any("bytes" in p for p in check_command(_search(long + knn)))
    many = "(" + " ".join(["@t:{a}"] * 501) + ")"  # 1,001 nodes in 3.5 KB
    assert any("nodes" in p for p in check_command(_search(many + knn)))
    assert check_command(_search("(" + " ".join(["@t:{a}"] * 500) + ")" + knn)) == []
