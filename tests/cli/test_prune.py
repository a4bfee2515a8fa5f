"""prune: deletes what the forgetting policy suppresses, and only with an explicit policy."""

from __future__ import annotations

import time
from typing import Any

from agent_memory import MemoryInput, Scope, SyncMemoryStore
from agent_memory.embedders import HashingEmbedder
from tests.cli.conftest import Seeded, unique

TEN_YEARS = 10 * 365 * 86400.0


def _opts(url: str, name: str) -> list[str]:
    return ["--url", url, "--name", name, "--embedder", "hashing"]


def _remember(url: str, name: str, namespace: str, texts: list[str], age: float) -> list[str]:
    clock = lambda: time.time() - age  # noqa: E731
    with SyncMemoryStore.from_url(url, name=name, embed=HashingEmbedder(), clock=clock) as s:
        s.ensure_index()
        return s.remember_many([MemoryInput(content=t, scope=Scope(namespace)) for t in texts])


def test_prune_deletes_forgotten_memories_only(cli: Any, search_url: str) -> None:
    name, ns, other = unique("cli"), unique("ns"), unique("ns")
    old = _remember(search_url, name, ns, ["an old note", "another old note"], TEN_YEARS)
    old_elsewhere = _remember(search_url, name, other, ["old in another namespace"], TEN_YEARS)
    fresh = _remember(search_url, name, ns, ["a fresh note"], 0)

    run = cli(*_opts(search_url, name), "prune", "--half-life", "30", "--namespace", ns)
    assert run.code == 0, run.err
    assert run.out.splitlines()[0] == f"pruned 2 forgotten memories of '{name}' (namespace '{ns}')"
    assert "half-life            30 days" in run.out
    listed = cli(*_opts(search_url, name), "--json", "list", "--namespace", ns).json()
    assert [i["id"] for i in listed["items"]] == fresh

    doc = cli(*_opts(search_url, name), "--json", "prune", "--half-life", "30").json()
    assert doc["deleted"] == old_elsewhere and doc["namespace"] is None
    assert doc["policy"]["retention_threshold"] == 0.05
    assert cli(*_opts(search_url, name), "--json", "stats").json()["items"] == 1
    assert set(old).isdisjoint(doc["deleted"])


def test_prune_policy_options(cli: Any, search_url: str) -> None:
    name, ns = unique("cli"), unique("ns")
    week_old = _remember(search_url, name, ns, ["a week old note"], 7 * 86400.0)
    kept = cli(*_opts(search_url, name), "--json", "prune", "--half-life", "30").json()
    assert kept["deleted"] == []  # default policy: a week is nothing
    fast = ["--half-life", "1", "--min-half-life", "0.5", "--max-half-life", "1"]
    doc = cli(*_opts(search_url, name), "--json", "prune", *fast).json()
    assert doc["deleted"] == week_old
    assert doc["policy"]["half_life_seconds"] == 86400.0
    for bad in (["--half-life", "0"], ["--retention-threshold", "1"], ["--half-life", "x"]):
        assert cli(*_opts(search_url, name), "prune", *bad).code == 2
    assert cli(*_opts(search_url, name), "prune", "--half-life", "400").code == 0  # bounds follow
    wrong = cli(*_opts(search_url, name), "prune", "--half-life", "400", "--max-half-life", "365")
    assert wrong.code == 1 and wrong.err.startswith("error: ")


def test_prune_requires_an_explicit_policy(cli: Any, seeded: Seeded) -> None:
    run = cli(*_opts(seeded.url, seeded.name), "prune")
    assert run.code == 2 and "--half-life" in run.err


def test_prune_help_gives_the_bounds_defaults_relative_to_the_half_life(cli: Any) -> None:
    # The library derives them from the half-life: "1" and "365" days hold for 30 only.
    shown = " ".join(cli("prune", "--help").out.split())
    assert "(default: the half-life / 30;" in shown
    assert "(default: the half-life * 365 / 30;" in shown
