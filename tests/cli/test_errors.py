"""Exit codes: 1 with ``error: ...`` (never a traceback) for library and input errors,
2 for usage errors; secrets in URLs never printed; mismatched embedders explained."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from agent_memory.embedders import HashingEmbedder
from tests.cli.conftest import seed, unique

REFUSED = "redis://127.0.0.1:1"


def test_unreachable_server_in_a_real_process(tmp_path: Path) -> None:
    url = "redis://alice:s3cr3t-pw@127.0.0.1:1/0"
    result = subprocess.run(
        [sys.executable, "-m", "agent_memory.cli.main", "--url", url, "--embedder", "hashing",
         "stats"],
        capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    assert "s3cr3t-pw" not in result.stderr + result.stdout
    assert not (tmp_path / "agent-memory-data").exists()  # --url: no embedded server


def test_library_errors_exit_1(cli: Any, search_url: str) -> None:
    refused = cli("--url", REFUSED, "--embedder", "hashing", "list")
    assert refused.code == 1 and refused.err.startswith("error: ") and refused.out == ""
    scheme = cli("--url", "http://example.invalid", "--embedder", "hashing", "stats")
    assert scheme.code == 1 and "unsupported URL scheme" in scheme.err
    long_tag = cli("--url", search_url, "--embedder", "hashing", "list", "--tag", "x" * 5000)
    assert long_tag.code == 1 and long_tag.err.startswith("error: ")


def test_password_masked_when_echoed(cli: Any, search_url: str) -> None:
    host = search_url.split("://", 1)[1]
    # The test server's default user has no password: it accepts any.
    url = f"redis://default:hunter2-pw@{host}"
    run = cli("--url", url, "--embedder", "hashing", "--name", unique("cli"), "stats")
    assert run.code == 0, run.err
    assert f"redis://default:***@{host}" in run.out and "hunter2" not in run.out
    wrong = cli("--url", f"redis://mallory:hunter2-pw@{host}", "--embedder", "hashing", "stats")
    assert wrong.code == 1 and wrong.err.startswith("error: ")
    assert "hunter2" not in wrong.err + wrong.out


def test_password_of_the_query_string_masked(cli: Any, search_url: str) -> None:
    """``stats`` printed a password given as ``?password=`` (table and --json)."""
    # The test server's default user has no password: it accepts any.
    url = f"{search_url}/0?username=default&password=hunter2-pw"
    for json_flag in ((), ("--json",)):
        run = cli("--url", url, "--embedder", "hashing", "--name", unique("cli"), *json_flag,
                  "stats")  # fmt: skip
        assert run.code == 0, run.err
        assert "hunter2" not in run.out + run.err
        assert "password=***" in run.out


def test_url_from_the_environment(cli: Any, search_url: str, monkeypatch: Any) -> None:
    monkeypatch.setenv("AGENT_MEMORY_URL", search_url)
    run = cli("--embedder", "hashing", "--name", unique("cli"), "--json", "stats")
    assert run.code == 0, run.err
    assert run.json()["server"] == search_url


def test_mask_and_redact() -> None:
    from agent_memory.cli.output import mask_url, redact

    assert mask_url("redis://:pw@h:1") == "redis://:***@h:1"
    assert mask_url("rediss://u:p@ss@h:1/0") == "rediss://u:***@h:1/0"
    assert mask_url("redis://tokenonly@h:1") == "redis://***@h:1"
    assert mask_url("redis://h:1") == "redis://h:1"
    # The password of the query string too (redis-py and valkey-py read it there).
    assert mask_url("redis://h:1/0?password=s3cret") == "redis://h:1/0?password=***"
    assert mask_url("redis://h/0?username=u&Password=a%40b&db=2") == (
        "redis://h/0?username=u&Password=***&db=2"
    )
    # Only the secret is blanked, the user name kept ...
    assert redact("cannot log in u:p@ss at h", "redis://u:p@ss@h:1") == "cannot log in u:*** at h"
    query = "redis://h:1/0?password=s3cret"
    assert redact(f"could not connect to {query}", query) == (
        "could not connect to redis://h:1/0?password=***"
    )
    assert redact("auth: 's3cret' refused", query) == "auth: '***' refused"
    # ... and a short one only as a whole token: a one-letter secret garbled every
    # word holding that letter ("server ***navailable").
    assert redact("server unavailable", "redis://u@h:1") == "server unavailable"
    assert redact("server unavailable: u", "redis://u@h:1") == "server unavailable: ***"
    assert redact("xhunter2-pw.", "redis://a:hunter2-pw@h") == "x***."


def test_usage_errors_exit_2(cli: Any) -> None:
    for argv in (
        ["nonsense"],
        [],
        ["list", "--limit", "0"],
        ["list", "--offset", "-1"],
        ["recall"],
        ["recall", "q", "-k", "many"],
        ["recall", "q", "--threshold", "3"],
        ["--embedder", "word2vec", "stats"],
        ["--embedder", "minilm", "--dim", "64", "stats"],
        ["serve", "--url", REFUSED],
    ):
        run = cli(*argv)
        assert run.code == 2, (argv, run.err)
        assert "usage:" in run.err and "Traceback" not in run.err


def test_mismatched_embedder_is_explained(cli: Any, search_url: str) -> None:
    name, namespace = unique("cli"), unique("ns")
    seed(search_url, name, namespace, embed=HashingEmbedder(64))
    run = cli("--url", search_url, "--name", name, "--embedder", "hashing", "list")
    assert run.code == 1 and run.out == ""
    first, hint = run.err.splitlines()[:2]
    assert first.startswith("error: ") and "64" in first and "384" in first
    assert hint.startswith("hint: open the store with the embedder that wrote it")
    assert "hashing (384 dimensions)" in hint
    ok = cli("--url", search_url, "--name", name, "--embedder", "hashing", "--dim", "64",
             "--json", "list", "--namespace", namespace)  # fmt: skip
    assert ok.code == 0 and ok.json()["total"] == 3


def test_unusable_data_folder(cli: Any, tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    run = cli("--path", str(blocker / "data"), "--embedder", "hashing", "stats")
    assert run.code == 1 and run.err.startswith(f"error: path '{blocker / 'data'}' is not a folder")
    assert "Traceback" not in run.err
