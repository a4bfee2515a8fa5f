"""How valkey-search can generate lexical candidates without scanning a namespace.

    AGENT_MEMORY_VALKEY_SEARCH_MODULES=../shared/servers \\
        .venv/bin/python -m benchmarks.lexical_filter --server valkey-search-1.2 --size 100000

Indexes ``--size`` hashes (one namespace) whose texts draw ``1 + 8`` words from a Zipf
vocabulary (``user`` in every one), with the library's hashed term vector (``lex``,
``FLAT``, inner product), a TAG of term tokens (``lex_terms``) and, on valkey-search 1.2,
the terms as a ``TEXT`` field. For queries of ``user`` and three Zipf words it times
(p50 of ``--repeat`` calls, one client) the lexical KNN 50 over:

* the whole namespace (what the library sent before: a scan of every memory);
* the memories holding one of the query's terms rarer than 5% (TAG prefilter);
* the same through the 1.2 ``TEXT`` field (``@lx:(a|b)`` prefilter);
* the TAG filter alone, without KNN (1.2 filter-only query, ``LIMIT 0 50``).

Prints one line per query with the matched count of the rare terms.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import valkey

from agent_memory.schema import lexical

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))

import test_servers

VOCABULARY = 3000
RARE = 0.05


def _words(rng: np.random.Generator, count: int) -> list[str]:
    ranks = np.arange(1, VOCABULARY + 1)
    p = 1.0 / ranks
    p /= p.sum()
    return [f"w{j}x" for j in rng.choice(VOCABULARY, count, p=p)]


def _load(client: Any, size: int, text_field: bool, rng: np.random.Generator) -> dict[str, int]:
    schema = [
        "lex", "VECTOR", "FLAT", "6", "TYPE", "FLOAT32", "DIM", str(lexical.LEX_DIM),
        "DISTANCE_METRIC", "IP", "ns", "TAG", "lt", "TAG", "SEPARATOR", ",",
    ]  # fmt: skip
    if text_field:
        schema += ["lx", "TEXT"]
    client.execute_command("FT.CREATE", "idx", "ON", "HASH", "PREFIX", "1", "d:", "SCHEMA", *schema)
    df: dict[str, int] = {}
    pipe = client.pipeline(transaction=False)
    for i in range(size):
        terms = sorted({"user", *_words(rng, 8)})
        for t in terms:
            df[t] = df.get(t, 0) + 1
        fields: dict[str, Any] = {
            "lex": lexical.document_vector(terms).astype("<f4").tobytes(),
            "ns": "n1",
            "lt": lexical.term_tokens(terms),
        }
        if text_field:
            fields["lx"] = " ".join(terms)
        pipe.hset(f"d:{i}", mapping=fields)
        if i % 1000 == 999:
            pipe.execute()
    pipe.execute()
    while True:
        info = client.execute_command("FT.INFO", "idx")
        values = dict(zip(info[::2], info[1::2], strict=False))
        if int(values.get(b"num_docs", 0)) >= size:
            return df
        time.sleep(0.5)


def _p50(client: Any, args: list[Any], repeat: int) -> tuple[float, Any]:
    times = []
    reply: Any = None
    for _ in range(repeat):
        began = time.perf_counter()
        reply = client.execute_command(*args)
        times.append(time.perf_counter() - began)
    return float(np.median(times) * 1000), reply[0]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--server", default="valkey-search-1.2")
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)
    text_field = args.server == "valkey-search-1.2"
    with tempfile.TemporaryDirectory() as folder:
        server = test_servers.start(args.server, Path(folder))
        try:
            client = valkey.Valkey.from_url(server.url)
            rng = np.random.default_rng(1)
            df = _load(client, args.size, text_field, rng)
            print(f"# {args.server}, {args.size:,} memories, p50 of {args.repeat} calls (ms)")
            for _ in range(args.queries):
                query = sorted({"user", *_words(rng, 3)})
                rare = [t for t in query if df.get(t, 0) / args.size < RARE]
                held = sum(df.get(t, 0) for t in rare)
                vector = lexical.query_vector(query)
                assert vector is not None
                base: list[Any] = [
                    "FT.SEARCH", "idx", "@ns:{n1}=>[KNN 50 @lex $v AS d]",
                    "PARAMS", "2", "v", vector.astype("<f4").tobytes(),
                    "RETURN", "1", "d", "LIMIT", "0", "50", "DIALECT", "2",
                ]  # fmt: skip
                row = [
                    f"rare terms hold {held:>6,}",
                    f"scan {_p50(client, base, args.repeat)[0]:7.2f}",
                ]
                if rare:
                    tags = " | ".join(f"@lt:{{{lexical.term_token(t)}}}" for t in rare)
                    tagged = [*base[:2], f"(@ns:{{n1}} ({tags}))=>[KNN 50 @lex $v AS d]", *base[3:]]
                    row.append(f"tag prefilter {_p50(client, tagged, args.repeat)[0]:6.2f}")
                    if text_field:
                        words = "|".join(rare)
                        texted = [
                            *base[:2],
                            f"(@ns:{{n1}} @lx:({words}))=>[KNN 50 @lex $v AS d]",
                            *base[3:],
                        ]
                        row.append(f"text prefilter {_p50(client, texted, args.repeat)[0]:6.2f}")
                        only = ["FT.SEARCH", "idx", f"@ns:{{n1}} ({tags})", "RETURN", "1", "ns",
                                "LIMIT", "0", "50", "DIALECT", "2"]  # fmt: skip
                        row.append(f"filter-only {_p50(client, only, args.repeat)[0]:6.2f}")
                print(" | ".join(row), flush=True)
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
