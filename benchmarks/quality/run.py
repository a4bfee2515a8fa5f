"""Quality benchmark on LoCoMo: the library on real servers (issue 8) and the issue 11
hybrid-recall research.

    python -m benchmarks.quality.run --data ../shared/data/locomo

Starts its own servers (``scripts/test_servers.py``: Valkey + search module -> FT
backend, plain Valkey -> portable backend), prints the tables, writes
``benchmarks/quality/RESULTS.md`` and returns a JSON-serialisable dict (``main``), which
the speed harness merges into ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import argparse
import importlib.metadata as md
import json
import platform
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.quality import (
    data,
    ft_probe,
    library_runs,
    peer,
    precision,
    research,
    research_run,
)
from benchmarks.quality.metrics import summarize

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def _servers_module() -> Any:
    scripts = str(ROOT / "scripts")
    if scripts not in sys.path:
        sys.path.insert(0, scripts)
    import test_servers  # type: ignore[import-not-found,unused-ignore]

    return test_servers


def make_embedder(name: str) -> Any:
    from agent_memory.embedders import HashingEmbedder, MiniLMEmbedder

    return MiniLMEmbedder() if name == "minilm" else HashingEmbedder()


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.quality.run", description=__doc__)
    ap.add_argument("--data", type=Path, required=True, help="folder of LoCoMo *.json files")
    ap.add_argument("--conversations", nargs="*", help="conversation ids (file stems)")
    ap.add_argument("--max-sessions", type=int, help="first N sessions of each conversation")
    ap.add_argument("--max-questions", type=int, help="first N questions of each conversation")
    ap.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    ap.add_argument("--servers", nargs="*", default=["valkey-redisearch", "valkey"],
                    help="server kinds of scripts/test_servers.py")  # fmt: skip
    ap.add_argument("--no-peer", action="store_true", help="skip betterdb-agent-memory")
    ap.add_argument("--research", choices=("full", "quick", "off"), default="full")
    ap.add_argument("--out", type=Path, default=RESULTS, help="markdown report ('-': none)")
    ap.add_argument("--json", type=Path, help="also write the result dict here")
    return ap.parse_args(argv)


def _version(pkg: str) -> str:
    try:
        return md.version(pkg)
    except md.PackageNotFoundError:
        return "?"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Run the quality benchmark; returns the results (also printed and written)."""
    args = parse(argv)
    convs = data.load(args.data, conversations=args.conversations,
                      max_sessions=args.max_sessions, max_questions=args.max_questions)  # fmt: skip
    embedder = make_embedder(args.embedder)
    preps = research.prepare(convs, embedder)  # embeds (or loads the cache) once
    all_q = summarize([o for p in preps for o in _dummy(p)])
    result: dict[str, Any] = {
        "command": "python -m benchmarks.quality.run "
        + shlex.join(argv if argv is not None else sys.argv[1:]),
        "embedder": str(getattr(embedder, "id", args.embedder)),
        "versions": {
            "python": platform.python_version(),
            "agent-memory": _version("agent-memory"),
            "machine": f"{platform.machine()} {platform.system()}",
        },
        "dataset": {
            "conversations": len(convs),
            "memories": sum(len(c.turns) for c in convs),
            "questions": sum(len(c.questions) for c in convs),
            "metrics_counts": all_q,
        },
        "library": {},
        "learning": _learning(),
    }
    servers = _servers_module()
    for kind in args.servers:
        with tempfile.TemporaryDirectory(prefix=f"quality-{kind}-") as tmp:
            srv = servers.start(kind, Path(tmp))
            try:
                result["library"][kind] = library_runs.run_library(srv.url, convs, embedder)
                if kind == "valkey-redisearch":  # the dialect production valkey-search accepts
                    result["library"][f"{kind} (baseline dialect)"] = library_runs.run_library(
                        srv.url, convs, embedder, prefix="locomo_base", ft_dialect="baseline"
                    )
                if kind == args.servers[0] and not args.no_peer:
                    result["peer"] = _peer(srv.url, convs, embedder, kind)
                if kind in ("valkey-redisearch", "redis-search") and args.research != "off":
                    result["ft_probe"] = {
                        "server": kind,
                        "runs": [
                            ft_probe.probe(srv.url, preps, pipe=research_run.WINNER, algo=algo)
                            for algo in ("FLAT", "HNSW")
                        ],
                    }
            finally:
                srv.stop()
    if args.no_peer:
        result["peer"] = {"skipped": "--no-peer"}
    result["reference"] = {
        "cosine, full ranking": research.full_channel(preps, lambda p: p.cos),
        "BM25 textbook, full ranking": research.full_channel(
            preps, lambda p: p.bm25_scores(research_run.TEXTBOOK)
        ),
        "recommended hybrid default (Part 2)": research.evaluate(preps, research_run.RECOMMENDED)[
            0
        ],
    }
    if args.research != "off":
        result["research"] = research_run.research(preps, quick=args.research == "quick")
        result["precision"] = [
            {"label": r.label, "metrics": r.metrics, "admissions": r.admissions,
             "chosen": r.chosen}
            for r in precision.run(preps, embedder)
        ]  # fmt: skip
    result["notes"] = (
        "See `benchmarks/quality/HYBRID.md` for the analysis and the recommended design."
    )
    text = _markdown(result)
    print(text)
    if str(args.out) != "-":
        args.out.write_text(text)
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))
    return result


def _markdown(result: dict[str, Any]) -> str:
    from benchmarks.quality.report import markdown

    return markdown(result)


def _dummy(p: research.Prepared) -> list[Any]:
    from benchmarks.quality.metrics import Outcome

    return [Outcome(q.category, None) for q in p.conv.questions]


def _learning() -> str:
    return (
        "scenario (c): complete() on the recalls of the even-position questions, then "
        "reinforcement=True on the odd-position ones, against (c0) the default on the same "
        "odd-position questions"
    )


def _peer(url: str, convs: list[data.Conversation], embedder: Any, kind: str) -> dict[str, Any]:
    try:
        out = peer.run_peer(url, convs, embedder)
    except (OSError, RuntimeError, ValueError) as exc:  # pip/venv/peer failure: report it
        return {"skipped": f"peer failed: {exc}"}
    except Exception as exc:  # noqa: BLE001 - a peer crash must not lose our own results
        return {"skipped": f"peer failed: {type(exc).__name__}: {exc}"}
    out["server"] = kind
    return out


if __name__ == "__main__":
    main()
