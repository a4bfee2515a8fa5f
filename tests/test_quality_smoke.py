"""Smoke test of the LoCoMo quality harness (benchmarks/quality) on a tiny slice.

Runs the real harness end to end on a tiny conversation kept in the repository
(``tests/fixtures/locomo``): it starts a Valkey with a search module (FT backend) and a
plain Valkey (portable backend), stores both sessions through the library, recalls the
questions and computes the numpy research rows.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from benchmarks.quality.run import main

DATA = Path(__file__).resolve().parent / "fixtures" / "locomo"
METRICS = ("r@1", "r@5", "r@10", "mrr", "mrr_full")


def _check(metrics: dict[str, dict[str, float]]) -> None:
    assert "all" in metrics
    for per_category in metrics.values():
        assert per_category["n"] >= 1
        for name in METRICS:
            assert 0.0 <= per_category[name] <= 1.0, (name, per_category)
        assert per_category["r@1"] <= per_category["r@5"] <= per_category["r@10"]


@pytest.mark.integration
def test_quality_harness_tiny_slice(tmp_path: Path) -> None:
    assert DATA.is_dir(), f"LoCoMo data folder missing: {DATA}"
    started = time.monotonic()
    out = tmp_path / "RESULTS.md"
    result = main(
        [
            "--data", str(DATA), "--conversations", "demo", "--max-sessions", "2",
            "--max-questions", "12", "--embedder", "hashing", "--no-peer",
            "--research", "quick", "--out", str(out),
        ]
    )  # fmt: skip
    assert time.monotonic() - started < 60
    assert result["dataset"]["memories"] > 0 and result["dataset"]["questions"] > 0
    baseline = "valkey-redisearch (baseline dialect)"
    assert set(result["library"]) == {"valkey-redisearch", baseline, "valkey"}
    assert result["library"]["valkey-redisearch"]["backend"] == "ft"
    assert result["library"][baseline]["backend"] == "ft"
    for run in result["library"].values():
        assert set(run["admissions"]) >= {"default", "cosine"}
        assert all(value >= 0 for value in run["admissions"].values())
    assert result["library"]["valkey"]["backend"] == "portable"
    for run in result["library"].values():
        for metrics in run["metrics"].values():
            _check(metrics)
    # Both backends rank the same vectors the same way for plain cosine top-k.
    ft, portable = (
        result["library"][k]["metrics"]["cosine"]["all"] for k in ("valkey-redisearch", "valkey")
    )
    assert ft["r@10"] == pytest.approx(portable["r@10"])
    for row in result["research"]["rows"]:
        _check(row["metrics"])
    for metrics in result["reference"].values():
        _check(metrics)
    assert "Part 1" in out.read_text()
