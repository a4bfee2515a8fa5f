"""Speed benchmark of agent-memory against the floor and the peers.

    .venv/bin/python -m benchmarks.run [--sizes 1000,10000,100000] [--big] [--quick]
        [--rounds 5] [--out benchmarks/results] [--no-peers] [--no-portable]
        [--no-embedder] [--locomo ../shared/data/locomo]

Starts its own servers (like the test suite), prints a table, writes
``<out>/results.json`` and ``benchmarks/RESULTS.md`` (``<out>/RESULTS.md`` when
``--out`` is given).
"""

from __future__ import annotations

import argparse
import asyncio
import datetime as dt
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

from benchmarks import extras, report
from benchmarks.data import DIM, Dataset
from benchmarks.peer import Peer, peer_versions
from benchmarks.scenarios import SCENARIOS, Runner
from benchmarks.servers import Servers, server_info, used_memory
from benchmarks.systems import Bench

HERE = Path(__file__).resolve().parent
DEFAULT_SIZES = (1_000, 10_000, 100_000)
QUICK_SIZES = (200,)


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--sizes", help="comma-separated memory counts (default 1000,10000,100000)")
    parser.add_argument("--big", action="store_true", help="add 1,000,000 memories")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, few rounds (smoke test)")
    parser.add_argument(
        "--rounds", type=int, default=None, help="timed rounds per scenario (default 5)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="folder for results.json (default benchmarks/results)",
    )
    parser.add_argument("--peers", dest="peers", action="store_true", default=True)
    parser.add_argument("--no-peers", dest="peers", action="store_false")
    parser.add_argument("--no-portable", dest="portable", action="store_false", default=True)
    parser.add_argument("--no-embedder", dest="embedder", action="store_false", default=True)
    parser.add_argument(
        "--locomo", type=Path, default=None, help="LoCoMo data folder for the quality run"
    )
    parser.add_argument(
        "--server",
        default="valkey-redisearch",
        help="server kind of scripts/test_servers.py for the FT timings (valkey-search-1.0 and "
        "valkey-search-1.2 need AGENT_MEMORY_VALKEY_SEARCH_MODULES)",
    )
    return parser.parse_args(argv)


def sizes_of(args: argparse.Namespace) -> list[int]:
    sizes = (
        [int(s) for s in args.sizes.split(",")]
        if args.sizes
        else list(QUICK_SIZES if args.quick else DEFAULT_SIZES)
    )
    if args.big:
        sizes.append(1_000_000)
    return sorted(set(sizes))


def not_measured() -> list[str]:
    from agent_memory import MemoryStore

    rows = []
    if not hasattr(MemoryStore, "consolidate"):
        rows.append("consolidate: not yet implemented (MemoryStore has no `consolidate`).")
    rows.append(
        "The peers have no blocking API, no session scope and no batch write: those cells are n/a."
    )
    return rows


async def speed(args: argparse.Namespace, servers: Servers, result: dict[str, Any]) -> None:
    sizes = sizes_of(args)
    rounds = args.rounds or (2 if args.quick else 5)
    scale = 0.25 if args.quick else 1.0
    url = servers.url(args.server)
    data = Dataset.build(max(sizes))
    bench = Bench(url, data)
    result["servers"][args.server] = await server_info(bench.client)
    result["backend"] = await bench.setup()
    peer = None
    if args.peers:
        folder = (args.out or HERE / "out") / "data"
        vectors, queries = data.save(folder)
        peer = Peer(url, "peer", vectors, queries)
        result["peer_versions"] = peer_versions()
    runner = Runner(bench, peer, rounds, scale)
    try:
        loaded = 0
        for size in sizes:
            block: dict[str, Any] = {}
            before = await used_memory(bench.client)
            began = time.perf_counter()
            await bench.load(loaded, size)
            took = time.perf_counter() - began
            added = size - loaded
            block["load"] = {
                "per_s": added / took,
                "seconds": took,
                "bytes_per_memory": (await used_memory(bench.client) - before) / added,
            }
            if peer is not None:
                reply = peer.load(loaded, size)
                block["peer_load"] = {
                    "per_s": added / reply["seconds"],
                    "seconds": reply["seconds"],
                    "bytes_per_memory": reply["memory_delta"] / added,
                }
            if loaded == 0:
                await bench.load_session()
            loaded = size
            print(f"# size {size:,}: loaded, library {block['load']['per_s']:,.0f}/s", flush=True)
            block["scenarios"] = []
            for sc in SCENARIOS:
                block["scenarios"].append(await runner.run(sc))
                print(f"#   {sc.label} x{sc.conc} done", flush=True)
            block["scenarios"].append(await runner.run_forget())
            result["sizes"][str(size)] = block
        result["event_loop_lag"] = await extras.event_loop_lag(
            url, data, rounds=5 if args.quick else 20
        )
    finally:
        runner.close()
        if peer is not None:
            peer.close()
        await bench.close()


async def portable(args: argparse.Namespace, servers: Servers, result: dict[str, Any]) -> None:
    url = servers.url("valkey")
    sizes = sizes_of(args)
    from valkey.asyncio import Valkey

    client = Valkey.from_url(url)
    result["servers"]["valkey"] = await server_info(client)
    await client.aclose()
    data = Dataset.build(max(sizes))
    result["portable"] = await extras.portable_recall(url, data, sizes, 20 if args.quick else 100)
    result["portable_lag"] = await extras.portable_lag(
        url, data, sizes[len(sizes) // 2], rounds=5 if args.quick else 20
    )


def quality(args: argparse.Namespace) -> Any:
    if args.locomo is None:
        return None
    try:
        from benchmarks.quality.run import main as quality_main
    except ImportError as exc:
        return {"error": f"benchmarks.quality is not available yet ({exc})"}
    return quality_main(["--data", str(args.locomo)])


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse(argv)
    command = "python -m benchmarks.run " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:])
    )
    result: dict[str, Any] = {
        "date": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "command": command.strip(),
        "machine": report.machine(),
        "versions": report.versions(),
        "dim": DIM,
        "servers": {},
        "sizes": {},
        "not_measured": not_measured(),
    }
    began = time.perf_counter()
    servers = Servers()
    try:
        asyncio.run(speed(args, servers, result))
        if args.portable:
            asyncio.run(portable(args, servers, result))
    finally:
        servers.stop_all()
    if args.embedder:
        result["embedder"] = extras.minilm_speed(args.quick)
    result["quality"] = quality(args)
    result["seconds"] = time.perf_counter() - began
    out = args.out or HERE / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(result, indent=1, default=str))
    md_path = out / "RESULTS.md" if args.out else HERE / "RESULTS.md"
    md_path.write_text(report.markdown(result))
    report.print_table(result)
    print(f"# wrote {out / 'results.json'} and {md_path} in {result['seconds']:.0f} s")
    return result


if __name__ == "__main__":
    main()
