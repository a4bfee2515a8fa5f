"""The benchmark harness runs end to end at a tiny size and reports every scenario."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.scenarios import SCENARIOS

ROOT = Path(__file__).resolve().parent.parent


def _positive(summary: dict[str, float]) -> bool:
    keys = ("p50_ms", "p95_ms", "p99_ms", "throughput_per_s")
    return all(summary[k] > 0 for k in keys)


def test_quick_run_reports_every_scenario(tmp_path: Path) -> None:
    out = tmp_path / "bench"
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.run", "--quick", "--no-peers", "--out", str(out)],
        cwd=ROOT,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result = json.loads((out / "results.json").read_text())
    assert (out / "RESULTS.md").read_text().startswith("# agent-memory benchmark results")

    assert result["machine"]["nproc"] >= 1
    assert result["servers"]["valkey-redisearch"]["version"]
    (block,) = result["sizes"].values()
    assert block["load"]["per_s"] > 0 and block["load"]["bytes_per_memory"] > 0
    found = {(r["scenario"], r["concurrency"]): r for r in block["scenarios"]}
    wanted = {(s.name, s.conc) for s in SCENARIOS} | {("forget_by_scope", 1)}
    assert set(found) == wanted
    for row in found.values():
        assert set(row["systems"]) == {"library", "floor"}
        assert all(_positive(s) for s in row["systems"].values()), row
        assert row["library_vs_floor"] > 0

    (portable,) = result["portable"]
    assert portable["backend"] == "portable"
    assert portable["p50_ms"] > 0 and portable["cold_ms"] > 0
    portable_lag = result["portable_lag"]
    assert portable_lag["size"] == portable["size"]
    assert portable_lag["library"]["ticks"] > 0 and portable_lag["on_the_loop"]["ticks"] > 0
    assert "| in a worker thread (library), portable backend" in (out / "RESULTS.md").read_text()
    embedder = result["embedder"]
    assert "error" not in embedder, embedder
    assert embedder["load_s"] > 0 and embedder["batched_per_s"] > 0
    assert result["not_measured"]
