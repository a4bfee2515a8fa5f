"""Machine facts, the console table and ``RESULTS.md``."""

from __future__ import annotations

import os
import platform
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any


def machine() -> dict[str, Any]:
    cpu = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    mem_kb = 0
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemTotal"):
            mem_kb = int(line.split()[1])
    return {
        "nproc": os.cpu_count(),
        "memory_gib": round(mem_kb / 1024 / 1024, 1),
        "cpu": cpu,
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def versions() -> dict[str, str]:
    out = {}
    for package in (
        "agent-memory",
        "valkey",
        "libvalkey",
        "redis",
        "hiredis",
        "numpy",
        "onnxruntime",
    ):
        try:
            out[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            out[package] = "not installed"
    try:
        commit = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
        ).stdout.strip()
        out["agent-memory commit"] = commit or "unknown"
    except OSError:
        pass
    return out


def _f(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def scenario_rows(size: int, results: list[dict[str, Any]]) -> list[str]:
    rows = []
    for r in results:
        s = r["systems"]
        lib, floor, peer = s["library"], s["floor"], s.get("peer")
        unit = "items/s" if r["items_per_op"] > 1 else "ops/s"
        peer_cols = (
            f"{_f(peer['p50_ms'])} | {_f(r['library_vs_peer'])}x"
            if peer
            else f"n/a | {r.get('peer_note', '')}"
        )
        note = r.get("peer_note", "") if peer else ""
        rows.append(
            f"| {size:,} | {r['label']} | {r['concurrency']} | {_f(lib['p50_ms'])} / "
            f"{_f(lib['p95_ms'])} / {_f(lib['p99_ms'])} | {lib['throughput_per_s']:,.0f} {unit} | "
            f"{_f(floor['p50_ms'])} | {_f(r['library_vs_floor'])}x | {peer_cols} {note} |"
        )
    return rows


HEADER = (
    "| size | scenario | callers | library p50 / p95 / p99 ms | library throughput | "
    "floor p50 ms | library / floor | peer p50 ms | library / peer |\n"
    "|---|---|---|---|---|---|---|---|---|"
)


def markdown(result: dict[str, Any]) -> str:
    m, v = result["machine"], result["versions"]
    lines = [
        "# agent-memory benchmark results",
        "",
        f"Run on {result['date']} with `{result['command']}`.",
        "",
        f"Machine: {m['nproc']} cores ({m['cpu']}), {m['memory_gib']} GiB, Linux {m['kernel']}, "
        f"Python {m['python']}.",
        "",
        "Versions: " + ", ".join(f"{k} {val}" for k, val in v.items()) + ".",
        "",
        "Servers: "
        + "; ".join(
            f"{k}: {val['version']} {', '.join(val['modules'])}"
            for k, val in result["servers"].items()
        )
        + ".",
        "",
        "Peers: "
        + (
            ", ".join(f"{k} {val}" for k, val in result.get("peer_versions", {}).items())
            or "not run"
        )
        + ".",
        "",
        "## How to read this",
        "",
        "* Latencies are per operation, pooled over all timed rounds; ratios are the median "
        "over rounds of (library round median) / (other round median). Library, floor and "
        "peer rounds alternate (rotating order), on the same server and data, so ratios "
        "compare runs made moments apart on this shared, noisy machine.",
        "* The floor is the least a bare `valkey` client must send for the call, with "
        "arguments built before timing: one unfiltered `FT.SEARCH ... KNN 8 RETURN 4` for "
        "every recall, one `HSET` of the same record for `remember`, a pipeline of the same "
        "100 `HSET`s for `remember_many`, a pipeline of 1,000 `DEL`s of the same keys for "
        "`forget_by_scope`, one `GET`/`SET` for the caches. Library / floor is what the "
        "library costs on top of the physical minimum (filters, candidates for re-ranking, "
        "the lexical channel, bookkeeping, side effects, Python).",
        f"* Vectors: {result['dim']}-dim, clustered, unit length, from a dict-lookup embedder "
        "(embedding time excluded). Recall uses k=8 and threshold 1.0 for both libraries "
        "(the library fetches max(4k, 50) = 50 candidates, the peer 4k = 32).",
        "* The peer's `recall` returns every field of each hit, the vector blob included; "
        "ours returns only the item fields.",
        "",
        *target_lines(result),
        "## Speed",
        "",
        HEADER,
    ]
    for size, block in result["sizes"].items():
        lines += scenario_rows(int(size), block["scenarios"])
    lines += ["", "## Load and server memory", ""]
    lines += [
        "| size | library remember_many load | library bytes / memory | peer load (8 callers) | peer bytes / memory |",
        "|---|---|---|---|---|",
    ]
    for size, block in result["sizes"].items():
        ld, pl = block["load"], block.get("peer_load")
        peer = f"{pl['per_s']:,.0f} /s | {pl['bytes_per_memory']:,.0f}" if pl else "not run | -"
        lines.append(
            f"| {int(size):,} | {ld['per_s']:,.0f} /s | {ld['bytes_per_memory']:,.0f} | {peer} |"
        )
    lines += [
        "",
        "Bytes per memory: INFO `used_memory` delta over the load divided by the memories added (vector in the hash, HNSW graph, tag/numeric indexes, registry and bucket entries).",
        "",
    ]
    lines += ["## Portable backend (plain Valkey, client-side exact KNN)", ""]
    lines += [
        "| size | load /s | first recall (mirror fill) ms | p50 ms | p95 ms | p99 ms |",
        "|---|---|---|---|---|---|",
    ]
    for p in result.get("portable", []):
        lines.append(
            f"| {p['size']:,} | {p['load_per_s']:,.0f} | {_f(p['cold_ms'])} | {_f(p['p50_ms'])} | "
            f"{_f(p['p95_ms'])} | {_f(p['p99_ms'])} |"
        )
    lag = result.get("event_loop_lag")
    if lag:
        lines += ["", "## Event loop", ""]
        lines.append(
            f"8 concurrent recalls with a blocking {lag['embedder_ms']} ms embedder, a ticker "
            "sleeping 1 ms at a time records how late it wakes: the library runs the embedder "
            "in a worker thread; the comparison hands it an `async` embedder that blocks "
            "inside (as a sync callback called on the loop would)."
        )
        lines += [
            "",
            "| embedder runs | lag p50 ms | lag p99 ms | lag max ms | full GCs (longest ms) |",
            "|---|---|---|---|---|",
        ]
        runs = [
            (lag, "library", "in a worker thread (library)"),
            (lag, "on_the_loop", "on the loop"),
        ]
        portable_lag = result.get("portable_lag")
        if portable_lag:
            where = f"portable backend, {portable_lag['size']:,} memories"
            runs += [
                (portable_lag, "library", f"in a worker thread (library), {where}"),
                (portable_lag, "on_the_loop", f"on the loop, {where}"),
            ]
        for measured, label, name in runs:
            if label in measured:
                x = measured[label]
                gcs = f"{x.get('full_gc', 0)} ({_f(x.get('full_gc_max_ms', 0.0))})"
                lines.append(
                    f"| {name} | {_f(x['p50_ms'])} | {_f(x['p99_ms'])} | {_f(x['max_ms'])} "
                    f"| {gcs} |"
                )
    lines += ["", "## Not measured", ""]
    for row in result["not_measured"]:
        lines.append(f"* {row}")
    e = result.get("embedder", {})
    lines += ["", "## Built-in local embedder (MiniLM), reported apart", ""]
    if "error" in e:
        lines.append(f"* {e['error']}")
    elif e:
        lines.append(
            f"* {e['model']}: load {e['load_s']:.2f} s, one sentence p50 {e['single_p50_ms']:.2f} ms "
            f"(p95 {e['single_p95_ms']:.2f} ms), batched {e['batched_per_s']:,.0f} sentences/s "
            f"({e['batch_size']} sentences)."
        )
    if result.get("quality") is not None:
        lines += [
            "",
            "## Quality",
            "",
            *quality_lines(result["quality"]),
        ]
    return "\n".join(lines) + "\n"


def _scenario(result: dict[str, Any], size: int, name: str, conc: int = 1) -> Any:
    block = result["sizes"].get(str(size))
    for r in (block or {}).get("scenarios", []):
        if r["scenario"] == name and r["concurrency"] == conc:
            return r
    return None


def _ratio(r: Any, key: str) -> str:
    return f"{r[key]:.2f}x" if r is not None and r.get(key) is not None else "not run"


def _across(
    result: dict[str, Any], size: int, top: tuple[str, str], bottom: tuple[str, str]
) -> str:
    """p50 of one system in one scenario over p50 of another (same run and size)."""
    a, b = _scenario(result, size, top[0]), _scenario(result, size, bottom[0])
    if a is None or b is None or top[1] not in a["systems"] or bottom[1] not in b["systems"]:
        return "not run"
    return f"{a['systems'][top[1]]['p50_ms'] / b['systems'][bottom[1]]['p50_ms']:.2f}x"


def target_lines(result: dict[str, Any]) -> list[str]:
    """The targets of the speed issue, each ratio as measured in this run."""
    sizes = sorted(int(s) for s in result["sizes"])
    if not sizes:
        return []
    mid = 10_000 if 10_000 in sizes else sizes[-1]
    rows = [
        (
            "default recall (hybrid, reinforce on) / peer `recall(reinforce=False)`",
            _across(result, mid, ("recall_reinforce", "library"), ("recall", "peer")),
            "<= 0.7x",
        ),
        (
            "default recall (hybrid) / peer recall, both reinforce off",
            _ratio(_scenario(result, mid, "recall"), "library_vs_peer"),
            "<= 0.7x",
        ),
        (
            "default recall (reinforce on) / bare KNN 8",
            _ratio(_scenario(result, mid, "recall_reinforce"), "library_vs_floor"),
            "<= 4x",
        ),
        (
            "`recall_by_vector` (reinforce off) / bare KNN 8",
            _ratio(_scenario(result, mid, "recall_by_vector"), "library_vs_floor"),
            "<= 2.5x",
        ),
        (
            "`remember` / peer `remember`",
            _ratio(_scenario(result, mid, "remember"), "library_vs_peer"),
            "<= 1.0x",
        ),
        (
            "`remember_many` of 100 / 100 bare HSETs (pipeline)",
            _ratio(_scenario(result, mid, "remember_many"), "library_vs_floor"),
            "<= 1.2x",
        ),
        (
            "`forget_by_scope` of 1,000 / 1,000 bare DELs (pipeline)",
            _ratio(_scenario(result, mid, "forget_by_scope"), "library_vs_floor"),
            "<= 1.3x",
        ),
    ]
    growth_rows = [(sizes[0], max(s for s in sizes if s <= 100_000), "<= 1.5x")]
    if 1_000_000 in sizes and mid in sizes and mid < 1_000_000:
        growth_rows.append((mid, 1_000_000, "<= 2x"))
    for low, high, target in growth_rows:
        small, big = (
            _scenario(result, low, "recall_reinforce"),
            _scenario(result, high, "recall_reinforce"),
        )
        if small is None or big is None or high <= low:
            continue
        growth = big["systems"]["library"]["p50_ms"] / small["systems"]["library"]["p50_ms"]
        rows.append(
            (
                f"default recall p50 at {high:,} / at {low:,} (one namespace)",
                f"{growth:.2f}x",
                target,
            )
        )
    lag = (result.get("event_loop_lag") or {}).get("library")
    if lag:
        gc_note = (
            f"; a full GC of the process took {lag['full_gc_max_ms']:.0f} ms"
            if lag.get("full_gc")
            else ""
        )
        rows.append(
            (
                "event-loop lag while 8 recalls run with a 20 ms sync embedder",
                f"max {lag['max_ms']:.2f} ms (p99 {lag['p99_ms']:.2f} ms{gc_note})",
                "<= 2 ms",
            )
        )
    portable = [p for p in result.get("portable", []) if p["size"] == mid]
    if portable:
        rows.append(
            (
                f"portable backend recall p50 at {mid:,} memories per namespace",
                f"{portable[0]['p50_ms']:.2f} ms",
                "<= 5 ms",
            )
        )
    lines = [
        f"## Targets (at {mid:,} memories unless stated)",
        "",
        "| measure | this run | target |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {value} | {target} |" for name, value, target in rows]
    return [*lines, ""]


_CATEGORIES = (("1", "multi-hop"), ("2", "temporal"), ("3", "open-domain"), ("4", "single-hop"))


def quality_lines(quality: Any) -> list[str]:
    """Evidence recall tables of the LoCoMo quality run (``benchmarks.quality``)."""
    if not isinstance(quality, dict) or "library" not in quality:
        return ["Quality run unavailable: " + str(quality)[:500]]
    dataset = quality.get("dataset", {})
    lines = [
        f"LoCoMo: {dataset.get('conversations', '?')} conversations, "
        f"{dataset.get('memories', '?')} memories, {dataset.get('questions', '?')} questions "
        f"(categories 1-4), embedder `{quality.get('embedder', '?')}`. Evidence recall@k and MRR@10; "
        "details per scenario in `benchmarks/quality/RESULTS.md`.",
        "",
        "| system | server / backend | ranking | r@1 | r@5 | r@10 | MRR | "
        + " | ".join(f"r@10 {name}" for _, name in _CATEGORIES)
        + " |",
        "|---|---|---|---|---|---|---|" + "---|" * len(_CATEGORIES),
    ]

    def row(system: str, where: str, ranking: str, metrics: dict[str, Any]) -> str:
        overall = metrics.get("all", {})
        cells = [f"{overall.get(m, 0):.3f}" for m in ("r@1", "r@5", "r@10", "mrr")]
        cells += [f"{metrics.get(c, {}).get('r@10', 0):.3f}" for c, _ in _CATEGORIES]
        return f"| {system} | {where} | {ranking} | " + " | ".join(cells) + " |"

    for server, run in quality["library"].items():
        for ranking, metrics in run.get("metrics", {}).items():
            lines.append(
                row("agent-memory", f"{server} / {run.get('backend', '?')}", ranking, metrics)
            )
    peer = quality.get("peer")
    if isinstance(peer, dict) and isinstance(peer.get("metrics"), dict):
        for ranking, metrics in peer["metrics"].items():
            lines.append(
                row(
                    f"betterdb-agent-memory {peer.get('version', '')}",
                    str(peer.get("server")),
                    ranking,
                    metrics,
                )
            )
    learning = quality.get("learning")
    if learning:
        lines += ["", f"Learning features: {learning}"]
    return lines


def print_table(result: dict[str, Any]) -> None:
    print(HEADER)
    for size, block in result["sizes"].items():
        for row in scenario_rows(int(size), block["scenarios"]):
            print(row)
