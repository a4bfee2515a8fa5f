"""stats, list and recall against a real Valkey with search, tables and --json."""

from __future__ import annotations

import re
from typing import Any

import pytest

from agent_memory import Scope, SyncMemoryStore
from agent_memory.embedders import HashingEmbedder
from tests.cli.conftest import MEMORIES, Seeded

ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def _opts(s: Seeded) -> list[str]:
    return ["--url", s.url, "--name", s.name, "--embedder", "hashing"]


def test_stats_table_and_json(cli: Any, seeded: Seeded) -> None:
    run = cli(*_opts(seeded), "stats")
    assert run.code == 0, run.err
    assert re.search(r"^memories\s+3$", run.out, re.M)
    assert re.search(r"^backend\s+ft \(", run.out, re.M)
    assert "cache tiers" in run.out and "llm" in run.out
    # global options also work after the subcommand name
    doc = cli("stats", *_opts(seeded), "--json").json()
    assert doc["items"] == 3 and doc["backend"] == "ft" and doc["dim"] == 384
    assert doc["name"] == seeded.name and doc["counters"]["remembers"] == 3
    assert doc["cache"]["llm_hits"] == 0 and doc["cache"]["llm_hit_rate"] == 0.0


def test_list_table_json_filters_and_paging(cli: Any, seeded: Seeded) -> None:
    run = cli(*_opts(seeded), "list", "--namespace", seeded.namespace)
    assert run.code == 0, run.err
    header, rule, *rows = run.out.splitlines()[:5]
    assert header.split() == ["ID", "CREATED", "IMP", "TAGS", "SCOPE", "CONTENT"]
    assert set(rule) <= {"-", " "}
    assert {r.split()[0] for r in rows[:3]} == set(seeded.ids)
    assert ISO.search(rows[0]) and "agent=" in rows[0]
    assert "1-3 of 3 memories" in run.out

    doc = cli(*_opts(seeded), "--json", "list", "--namespace", seeded.namespace).json()
    assert doc["total"] == 3
    assert {i["id"] for i in doc["items"]} == set(seeded.ids)
    item = next(i for i in doc["items"] if i["id"] == seeded.ids[2])
    assert item["content"] == MEMORIES[2][0] and item["tags"] == ["health", "prefs"]
    assert item["scope"] == {
        "namespace": seeded.namespace, "agent_id": "planner", "thread_id": None,
        "session_id": None,
    }  # fmt: skip

    ns = ["--namespace", seeded.namespace]
    tagged = cli(*_opts(seeded), "--json", "list", *ns, "--tag", "prefs").json()
    assert {i["id"] for i in tagged["items"]} == {seeded.ids[0], seeded.ids[2]}
    both = cli(*_opts(seeded), "--json", "list", *ns, "--tag", "prefs", "--tag", "health").json()
    assert [i["id"] for i in both["items"]] == [seeded.ids[2]]
    agent = cli(*_opts(seeded), "--json", "list", *ns, "--agent", "planner").json()
    assert [i["id"] for i in agent["items"]] == [seeded.ids[2]]
    page = cli(*_opts(seeded), "list", *ns, "--limit", "1", "--offset", "1")
    assert "2-2 of 3 memories; --offset 2 for more" in page.out
    empty = cli(*_opts(seeded), "list", "--namespace", "nobody-here")
    assert empty.code == 0 and empty.out.strip() == "no memories"


def test_recall_table_json_threshold_and_reinforce(cli: Any, seeded: Seeded) -> None:
    ns = ["--namespace", seeded.namespace]
    run = cli(*_opts(seeded), "recall", "dark mode editor", *ns, "-k", "2")
    assert run.code == 0, run.err
    lines = run.out.splitlines()
    assert lines[0].split() == ["#", "SCORE", "DIST", "ID", "CREATED", "CONTENT"]
    assert lines[2].split()[0] == "1" and seeded.ids[0] in lines[2]
    assert "The user prefers dark mode" in lines[2]
    assert "selection" in run.out

    doc = cli(*_opts(seeded), "--json", "recall", "dark mode editor", *ns).json()
    top = doc["hits"][0]
    assert top["item"]["id"] == seeded.ids[0] and 0 < top["score"] <= 1
    assert abs(top["similarity"] - (1 - top["distance"])) < 1e-9
    assert doc["selection_id"] and doc["backend"] == "ft" and doc["query"] == "dark mode editor"

    # (a query sharing no word with any memory: lexical matches pass the gate)
    strict = cli(*_opts(seeded), "recall", "zebra quantum", *ns, "--threshold", "0.0001")
    assert strict.code == 0 and "nothing within the threshold" in strict.out
    none = cli(*_opts(seeded), "--json", "recall", "dark", "--namespace", "empty-ns").json()
    assert none["hits"] == [] and none["nearest_distance"] is None

    # read-only unless --reinforce
    with SyncMemoryStore.from_url(seeded.url, name=seeded.name, embed=HashingEmbedder()) as s:
        assert s.get(seeded.ids[0]).access_count == 0  # type: ignore[union-attr]
        cli(*_opts(seeded), "recall", "dark mode editor", *ns, "--reinforce")
        assert s.get(seeded.ids[0]).access_count == 1  # type: ignore[union-attr]


def test_long_content_is_truncated_and_escaped(cli: Any, search_url: str) -> None:
    from tests.cli.conftest import unique

    name = unique("cli")
    with SyncMemoryStore.from_url(search_url, name=name, embed=HashingEmbedder()) as store:
        store.ensure_index()
        mid = store.remember("placeholder")
        # The library refuses control characters; another writer of the layout may not.
        content = "evil \x1b[31mred\x1b[0m text\nsecond line " + "word " * 100
        store.client.hset(f"{name}:mem:{mid}", "content", content)
    run = cli("--url", search_url, "--name", name, "--embedder", "hashing", "list")
    row = run.out.splitlines()[2]
    assert "\x1b" not in run.out and "\\x1b[31mred" in row
    assert row.endswith("…") and len(row) <= 160


def test_auto_and_minilm_embedders(cli: Any, search_url: str) -> None:
    from agent_memory.embedders import MiniLMEmbedder
    from tests.cli.conftest import seed, unique

    name, namespace = unique("cli"), unique("ns")
    seed(search_url, name, namespace, embed=MiniLMEmbedder())
    for embedder in ("auto", "minilm"):
        args = ["--url", search_url, "--name", name, "--embedder", embedder, "--json"]
        doc = cli(
            *args, "recall", "which colour theme does the user like?", "--namespace", namespace
        ).json()
        assert doc["hits"][0]["item"]["content"] == MEMORIES[0][0], embedder


def test_a_damaged_creation_time_is_listed_as_its_number(cli: Any, seeded: Any) -> None:
    """``list`` crashed with a traceback on a created_at no date can show."""
    import valkey

    client = valkey.Valkey.from_url(seeded.url)
    try:
        client.hset(f"{seeded.name}:mem:{seeded.ids[0]}", "created_at", str(10**17))
    finally:
        client.close()
    run = cli("--url", seeded.url, "--name", seeded.name, "--embedder", "hashing", "list",
              "--namespace", seeded.namespace)  # fmt: skip
    assert "Traceback" not in run.err and run.code == 0, run.err
    assert str(10**17) in run.out


@pytest.mark.parametrize("encoding", ["cp1252", "ascii"])
def test_a_console_that_is_not_utf8_gets_escapes(
    search_url: str, tmp_path: Any, encoding: str
) -> None:
    """On a cp1252 or ASCII console an emoji raised UnicodeEncodeError from every table
    and --json command. Tables now escape what the console cannot show; --json stays
    valid JSON (\\u escapes) holding the same text."""
    import json
    import os
    import subprocess
    import sys

    from tests.cli.conftest import unique

    name, namespace = unique("enc"), unique("ns")
    content = "Ada 👩‍💻 likes crème brûlée ✓"
    with SyncMemoryStore.from_url(search_url, name=name, embed=HashingEmbedder()) as store:
        store.remember(content, scope=Scope(namespace))
    env = {**os.environ, "PYTHONIOENCODING": encoding}
    opts = ["--url", search_url, "--name", name, "--embedder", "hashing"]

    def run(*argv: str) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            [sys.executable, "-m", "agent_memory.cli.main", *opts, *argv],
            capture_output=True, text=True, encoding=encoding, env=env, timeout=60,
            cwd=tmp_path, check=False,
        )  # fmt: skip
        assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
        return done

    table = run("list", "--namespace", namespace).stdout
    assert "\\U0001f469" in table
    listed = json.loads(run("--json", "list", "--namespace", namespace).stdout)
    assert [item["content"] for item in listed["items"]] == [content]
    recalled = json.loads(run("--json", "recall", "Ada", "--namespace", namespace).stdout)
    assert content in json.dumps(recalled, ensure_ascii=False)
    assert "\\U0001f469" in run("recall", "Ada", "--namespace", namespace).stdout
