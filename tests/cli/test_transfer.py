"""export -> import round trips (stdout/stdin and files), progress lines, bad input."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Seeded, seed, unique


def _opts(url: str, name: str) -> list[str]:
    return ["--url", url, "--name", name, "--embedder", "hashing"]


def _listed(cli: Any, url: str, name: str, namespace: str) -> list[dict[str, Any]]:
    doc = cli(*_opts(url, name), "--json", "list", "--namespace", namespace).json()
    return sorted(doc["items"], key=lambda i: i["id"])


def _recalled(cli: Any, url: str, name: str, namespace: str) -> list[tuple[str, float]]:
    args = ["--json", "recall", "user prefers peanuts", "--namespace", namespace]
    doc = cli(*_opts(url, name), *args).json()
    return [(h["item"]["id"], round(h["distance"], 6)) for h in doc["hits"]]


@pytest.mark.parametrize("kind", ["valkey-redisearch", "valkey"])
def test_export_file_import_into_another_name(
    cli: Any, servers: Any, tmp_path: Path, kind: str
) -> None:
    url = servers.get(kind).url
    name, copy, namespace = unique("src"), unique("dst"), unique("ns")
    seed(url, name, namespace)
    dump = tmp_path / "memories.jsonl"
    run = cli(*_opts(url, name), "export", "--namespace", namespace, "--output", str(dump))
    assert run.code == 0, run.err
    assert run.out.strip() == f"exported 3 memories of '{name}' to {dump}"
    assert run.err == ""  # stderr is no TTY here: no progress line
    lines = dump.read_text().splitlines()
    assert len(lines) == 3 and all("vector" in json.loads(line) for line in lines)
    assert not list(tmp_path.glob(".*partial"))

    imported = cli(*_opts(url, copy), "--json", "import", "--input", str(dump)).json()
    assert imported == {"read": 3, "imported": 3, "skipped_expired": 0, "repeated_ids": 0}
    assert _listed(cli, url, copy, namespace) == _listed(cli, url, name, namespace)
    assert _recalled(cli, url, copy, namespace) == _recalled(cli, url, name, namespace)
    stats = cli(*_opts(url, copy), "--json", "stats").json()
    assert stats["items"] == 3
    assert stats["backend"] == ("ft" if kind == "valkey-redisearch" else "portable")


def test_stdout_stdin_without_vectors_reembeds_with_progress(
    cli: Any, seeded: Seeded, monkeypatch: pytest.MonkeyPatch
) -> None:
    ns = ["--namespace", seeded.namespace]
    run = cli(*_opts(seeded.url, seeded.name), "export", *ns, "--no-vectors", "--progress")
    assert run.code == 0, run.err
    records = [json.loads(line) for line in run.out.splitlines()]
    assert len(records) == 3 and not any("vector" in r for r in records)
    assert run.err.startswith("\rexporting: 3 records") and run.err.endswith("\n")

    copy = unique("dst")
    monkeypatch.setattr(sys, "stdin", io.StringIO(run.out + "\n"))  # blank lines are skipped
    done = cli(*_opts(seeded.url, copy), "import", "--reembed", "--batch-size", "2", "--progress")
    assert done.code == 0, done.err
    assert done.out.strip() == f"imported 3 of 3 memories into '{copy}'"
    assert "importing: 2/3 (66%)" in done.err and "importing: 3/3 (100%)" in done.err
    assert _listed(cli, seeded.url, copy, seeded.namespace) == _listed(
        cli, seeded.url, seeded.name, seeded.namespace
    )
    assert _recalled(cli, seeded.url, copy, seeded.namespace) == _recalled(
        cli, seeded.url, seeded.name, seeded.namespace
    )


def test_bad_import_input_writes_nothing(cli: Any, seeded: Seeded, tmp_path: Path) -> None:
    copy = unique("dst")
    opts = _opts(seeded.url, copy)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "x"}\nnot json\n')
    run = cli(*opts, "import", "--input", str(bad))
    assert run.code == 1 and run.out == ""
    assert run.err.startswith(f"error: {bad} line 2: not JSON")
    bad.write_text("[" * 100_000 + "\n")
    deep = cli(*opts, "import", "-i", str(bad))
    assert deep.err.startswith(f"error: {bad} line 1: JSON nested too deeply")
    assert "Traceback" not in deep.err
    bad.write_text("[1, 2]\n")
    assert "line 1: expected a JSON object" in cli(*opts, "import", "-i", str(bad)).err
    missing = cli(*opts, "import", "--input", str(tmp_path / "nope.jsonl"))
    assert missing.code == 1 and "cannot read" in missing.err and "Traceback" not in missing.err
    bad.write_text('{"id": "not an id!", "content": "x"}\n')
    invalid = cli(*opts, "import", "-i", str(bad))
    assert invalid.code == 1 and invalid.err.startswith("error: ")
    assert cli(*opts, "--json", "stats").json()["items"] == 0


def test_export_to_an_unwritable_place_fails_cleanly(
    cli: Any, seeded: Seeded, tmp_path: Path
) -> None:
    target = tmp_path / "missing-dir" / "out.jsonl"
    run = cli(*_opts(seeded.url, seeded.name), "export", "-o", str(target))
    assert run.code == 1 and run.err.startswith(f"error: cannot write {target}")


@pytest.mark.parametrize("where", [".", "/", "", "dir"])
def test_export_to_a_directory_is_refused_before_reading(
    cli: Any, seeded: Seeded, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    monkeypatch.chdir(tmp_path)
    target = str(tmp_path) if where == "dir" else where
    run = cli(*_opts(seeded.url, seeded.name), "export", "-o", target)
    assert run.code == 1 and run.out == ""
    assert run.err == f"error: cannot write {target!r}: it is a directory; name a file\n"
    assert list(tmp_path.iterdir()) == []


def _lines(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def test_import_summary_counts_memories_not_records(
    cli: Any, search_url: str, tmp_path: Path
) -> None:
    name = unique("dst")
    dump = tmp_path / "in.jsonl"
    dump.write_text(_lines(
        {"id": "e1", "content": "expired one", "ttl_remaining_ms": -5},
        {"id": "d1", "content": "first version"},
        {"id": "d1", "content": "second version"},
        {"id": "g1", "content": "kept"},
    ))  # fmt: skip
    run = cli(*_opts(search_url, name), "import", "-i", str(dump))
    assert run.code == 0, run.err
    assert run.out == (
        f"imported 2 of 4 memories into '{name}' "
        "(1 expired, skipped, 1 repeated an earlier record's id)\n"
    )
    as_json = cli(*_opts(search_url, name), "--json", "import", "-i", str(dump)).json()
    assert as_json == {"read": 4, "imported": 2, "skipped_expired": 1, "repeated_ids": 1}
    assert cli(*_opts(search_url, name), "--json", "stats").json()["items"] == 2


def test_a_failed_batch_says_what_the_batches_before_wrote(
    cli: Any, search_url: str, tmp_path: Path
) -> None:
    name = unique("dst")
    dump = tmp_path / "in.jsonl"
    dump.write_text(_lines(
        {"id": "e1", "content": "expired one", "ttl_remaining_ms": -5},
        {"id": "e2", "content": "expired two", "ttl_remaining_ms": -5},
        {"id": "g3", "content": "good three"},
        {"id": "bad4", "content": "bad", "importance": 7},
    ))  # fmt: skip
    run = cli(*_opts(search_url, name), "import", "-i", str(dump), "--batch-size", "3")
    assert run.code == 1 and "Traceback" not in run.err
    assert run.err.endswith(
        "(in records 4-4, none of which was written; the 3 records before: 1 imported, "
        "2 expired, skipped; fix the input and run the import again)\n"
    )
    assert cli(*_opts(search_url, name), "--json", "stats").json()["items"] == 1


def test_a_batch_the_server_failed_may_be_written_in_part(
    cli: Any, search_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server failure during a later batch's writes does not claim that nothing of
    that batch was written: it may have been, and a re-run rewrites the same ids."""
    from agent_memory import SyncMemoryStore
    from agent_memory.errors import ServerUnavailableError

    real = SyncMemoryStore.import_records
    calls = 0

    def failing_second_batch(self: SyncMemoryStore, records: Any, **kw: Any) -> list[str]:
        nonlocal calls
        calls += 1
        if calls == 2:
            raise ServerUnavailableError("connection lost during the writes")
        return real(self, records, **kw)

    monkeypatch.setattr(SyncMemoryStore, "import_records", failing_second_batch)
    name = unique("dst")
    dump = tmp_path / "in.jsonl"
    dump.write_text(_lines({"id": "a1", "content": "one"}, {"id": "a2", "content": "two"}))
    run = cli(*_opts(search_url, name), "import", "-i", str(dump), "--batch-size", "1")
    assert run.code == 1 and "Traceback" not in run.err
    assert run.err.endswith(
        "(in records 2-2, some of which may have been written; the 1 records before: "
        "1 imported; run the import again: it rewrites the same ids)\n"
    ), run.err


@pytest.mark.parametrize("errors", ["strict", "surrogateescape"])
def test_stdin_that_is_not_utf8_is_an_input_error(
    cli: Any, monkeypatch: pytest.MonkeyPatch, errors: str
) -> None:
    """stdin's bytes are read as UTF-8 whatever the locale: under a strict UTF-8 locale
    a byte that is not UTF-8 raised UnicodeDecodeError (a traceback), under the C
    locale it passed as a lone surrogate. Now both are the error -i FILE gives."""
    raw = io.BytesIO(b'{"content": "ok"}\n{"content": "\xff"}\n')
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(raw, encoding="utf-8", errors=errors))
    run = cli("--url", "redis://127.0.0.1:1", "--embedder", "hashing", "import")
    assert run.code == 1 and run.out == ""
    assert run.err.startswith("error: cannot read stdin: not UTF-8 text"), run.err


def test_export_whose_partial_file_is_a_directory_fails_cleanly(
    cli: Any, seeded: Seeded, tmp_path: Path
) -> None:
    """The cleanup of ``.F.partial`` raised IsADirectoryError with a traceback when that
    name was a directory; it is refused before anything is read, and left alone."""
    target = tmp_path / "out.jsonl"
    (tmp_path / ".out.jsonl.partial").mkdir()
    run = cli(*_opts(seeded.url, seeded.name), "export", "-o", str(target))
    assert run.code == 1 and run.out == "" and "Traceback" not in run.err
    assert run.err.startswith(f"error: cannot write {target}: ") and "is a directory" in run.err
    assert (tmp_path / ".out.jsonl.partial").is_dir() and not target.exists()
