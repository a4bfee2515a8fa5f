"""Issue 11 prototype on a real FT server: the hashed lexical channel as a second VECTOR
field (``DISTANCE_METRIC IP``) searched with KNN in the same pipeline as the semantic KNN.

Only commands of the valkey-search 1.0.2 dialect are sent (two VECTOR fields, KNN with
``AS`` alias, ``RETURN``, ``LIMIT``, ``DIALECT 2``). The server's candidate pools then go
through the same exact-BM25 rescoring and fusion as the numpy prototype, so the table
shows what HNSW on sparse hashed vectors costs in recall, and the latency of one versus
two KNN queries per round trip.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import valkey

from benchmarks.quality import lexical as L
from benchmarks.quality import research as R
from benchmarks.quality.metrics import summarize


def _create(client: Any, idx: str, prefix: str, dim_sem: int, dim_lex: int, algo: str) -> None:
    client.execute_command(
        "FT.CREATE", idx, "ON", "HASH", "PREFIX", "1", prefix, "SCHEMA",
        "vector", "VECTOR", algo, "6", "TYPE", "FLOAT32", "DIM", str(dim_sem),
        "DISTANCE_METRIC", "COSINE",
        "lex", "VECTOR", algo, "6", "TYPE", "FLOAT32", "DIM", str(dim_lex),
        "DISTANCE_METRIC", "IP",
    )  # fmt: skip


def _knn(idx: str, field: str, n: int, blob: bytes) -> tuple[Any, ...]:
    return (
        "FT.SEARCH", idx, f"*=>[KNN {n} @{field} $q AS d]", "PARAMS", "2", "q", blob,
        "RETURN", "1", "d", "LIMIT", "0", str(n), "DIALECT", "2",
    )  # fmt: skip


def _keys(reply: Any, prefix: str) -> list[int]:
    out = []
    if isinstance(reply, dict):  # RESP3 RediSearch shape
        entries = [r["id"] for r in reply.get("results", [])]
    else:
        entries = [reply[i] for i in range(1, len(reply), 2)]
    for key in entries:
        text = key.decode() if isinstance(key, bytes) else str(key)
        out.append(int(text[len(prefix) :]))
    return out


def probe(
    url: str, preps: Sequence[R.Prepared], *, pipe: R.Pipeline, algo: str = "HNSW"
) -> dict[str, Any]:
    """Store each conversation with both fields, query both channels, fuse the server pools."""
    assert pipe.dim is not None
    client: Any = valkey.Valkey.from_url(url)
    held: dict[str, R.Ranks] = {}
    one: list[float] = []
    two: list[float] = []
    overlap: list[float] = []
    try:
        for p in preps:
            prefix, idx = f"qprobe{algo}{p.conv.id}:", f"qprobe{algo}{p.conv.id}idx"
            _create(client, idx, prefix, p.turn_vecs.shape[1], pipe.dim, algo)
            docs, queries, _ = p.terms(pipe.analyzer)
            lex_docs = L.doc_vectors(docs, pipe.dim, mode="log")
            sem_docs = p.turn_vecs
            with client.pipeline(transaction=False) as pl:
                for j in range(len(p.ids)):
                    pl.hset(f"{prefix}{j}", mapping={
                        "vector": sem_docs[j].astype(np.float32).tobytes(),
                        "lex": lex_docs[j].astype(np.float32).tobytes(),
                    })  # fmt: skip
                pl.execute()
            pools = []
            exact_lex = p.hashed_scores(pipe.analyzer, pipe.dim, pipe.hash_idf)
            for i, terms in enumerate(queries):
                sem_q = p.query_vecs[i].astype(np.float32).tobytes()
                lex_q = L.query_vector(terms, pipe.dim).tobytes()
                start = time.perf_counter()
                client.execute_command(*_knn(idx, "vector", pipe.n, sem_q))
                one.append(time.perf_counter() - start)
                start = time.perf_counter()
                with client.pipeline(transaction=False) as pl:
                    pl.execute_command(*_knn(idx, "vector", pipe.n, sem_q))
                    pl.execute_command(*_knn(idx, "lex", pipe.n, lex_q))
                    sem_reply, lex_reply = pl.execute()
                two.append(time.perf_counter() - start)
                sem, lex = _keys(sem_reply, prefix), _keys(lex_reply, prefix)
                lex = [j for j in lex if exact_lex[i, j] > 0]
                exact = {int(j) for j in np.argsort(-exact_lex[i], kind="stable")[: pipe.n]
                         if exact_lex[i, j] > 0}  # fmt: skip
                if exact:
                    overlap.append(len(exact & set(lex)) / len(exact))
                pools.append((sem, lex))
            held[p.conv.id] = pipe.ranks(p, pools=pools)
            client.execute_command("FT.DROPINDEX", idx)
            client.delete(*[f"{prefix}{j}" for j in range(len(p.ids))])
    finally:
        client.close()
    return {
        "algorithm": algo,
        "metrics": summarize(R.outcomes(preps, held)),
        "lexical_pool_recall_vs_exact": float(np.mean(overlap)) if overlap else 0.0,
        "knn_one_ms_median": 1000 * statistics.median(one),
        "knn_two_pipelined_ms_median": 1000 * statistics.median(two),
    }
