"""The default server: the embedded one of --path, started and stopped around each
command (or reused, and left running, when another process already serves it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_memory.embedded.server import open_embedded
from tests.cli.conftest import MEMORIES, seed


def _cli(data: Path, *argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_memory.cli.main", "--path", str(data),
         "--embedder", "hashing", *argv],
        input=stdin, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip


def test_embedded_default_round_trip(cli: Any, tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = open_embedded(data)
    try:
        ids = seed(server.url, "agent_memory", "ns")
    finally:
        server.stop()
    assert not (data / "server.json").exists()

    opts = ["--path", str(data), "--embedder", "hashing"]
    listed = cli(*opts, "--json", "list", "--namespace", "ns")
    assert listed.code == 0, listed.err
    assert {i["id"] for i in listed.json()["items"]} == set(ids)
    assert not (data / "server.json").exists()  # the command stopped what it started

    recall = cli(*opts, "recall", "peanuts allergy", "--namespace", "ns", "-k", "1")
    assert recall.code == 0 and MEMORIES[2][0] in recall.out
    stats = cli(*opts, "stats")
    assert "(embedded, " in stats.out and str(data) in stats.out

    exported = _cli(data, "export", "--namespace", "ns")
    assert exported.returncode == 0, exported.stderr
    assert exported.stdout.count("\n") == 3 and exported.stderr == ""
    imported = _cli(data, "--name", "copy", "import", stdin=exported.stdout)
    assert imported.returncode == 0, imported.stderr
    assert imported.stdout.strip() == "imported 3 of 3 memories into 'copy'"
    copy = cli(*opts, "--name", "copy", "--json", "list", "--namespace", "ns").json()
    source = cli(*opts, "--json", "list", "--namespace", "ns").json()
    assert copy["items"] == source["items"]  # (after the recall above: exposures included)
    assert not (data / "server.json").exists()


def test_reuses_a_running_embedded_server_and_leaves_it_running(cli: Any, tmp_path: Path) -> None:
    server = open_embedded(tmp_path)
    try:
        seed(server.url, "agent_memory", "ns")
        run = cli("--path", str(tmp_path), "--embedder", "hashing", "--json", "stats")
        assert run.code == 0 and run.json()["items"] == 3
        assert server.process is not None and server.process.alive()
        busy = cli("--path", str(tmp_path), "serve")
        assert busy.code == 1 and "already served" in busy.err
    finally:
        server.stop()


def test_serve_runs_until_sigterm(tmp_path: Path) -> None:
    serve = subprocess.Popen(
        [sys.executable, "-m", "agent_memory.cli.main", "--path", str(tmp_path), "serve"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert serve.stdout is not None
        line = serve.stdout.readline()
        assert line.startswith(f"serving {tmp_path} at redis://127.0.0.1:"), serve.stderr
        assert (tmp_path / "server.json").exists()
        stats = _cli(tmp_path, "--json", "stats")  # reuses the served folder
        assert stats.returncode == 0, stats.stderr
        assert (tmp_path / "server.json").exists()  # a reuser does not stop the server
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=30) == 0
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
    assert not (tmp_path / "server.json").exists()


def test_serve_json_says_where_it_serves_in_one_line(tmp_path: Path) -> None:
    serve = subprocess.Popen(
        [sys.executable, "-m", "agent_memory.cli.main", "--path", str(tmp_path), "--json",
         "serve"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert serve.stdout is not None
        served = json.loads(serve.stdout.readline())
        assert served["path"] == str(tmp_path), serve.stderr
        port = json.loads((tmp_path / "server.json").read_text())["port"]
        assert served["url"] == f"redis://127.0.0.1:{port}"
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=30) == 0
    finally:
        if serve.poll() is None:
            serve.terminate()  # stops its server too, unlike a kill
            serve.wait(timeout=30)


def test_serve_stops_cleanly_on_a_sigterm_sent_as_it_says_where(
    cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A supervisor stopping the server as soon as it reads the line: the signal lands
    # while the line is still being written.
    from agent_memory.cli.commands import serve

    def write_then_terminated(text: str = "") -> None:
        sys.stdout.write(text + "\n")
        os.kill(os.getpid(), signal.SIGTERM)

    monkeypatch.setattr(serve, "out", write_then_terminated)
    run = cli("--path", str(tmp_path), "serve")
    assert run.code == 0, run.err
    assert run.out.startswith(f"serving {tmp_path} at redis://127.0.0.1:")
    assert not (tmp_path / "server.json").exists()  # stopped


def test_serve_on_a_chosen_port(tmp_path: Path) -> None:
    import socket

    with socket.socket() as probe:  # a port free right now
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    serve = subprocess.Popen(
        [sys.executable, "-m", "agent_memory.cli.main", "--path", str(tmp_path), "serve",
         "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert serve.stdout is not None
        line = serve.stdout.readline()
        assert line.strip() == f"serving {tmp_path} at redis://127.0.0.1:{port} (Ctrl-C to stop)"
        url = f"redis://127.0.0.1:{port}"
        stats = subprocess.run(
            [sys.executable, "-m", "agent_memory.cli.main", "--url", url, "--embedder",
             "hashing", "--json", "stats"],
            capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert stats.returncode == 0, stats.stderr
        serve.send_signal(signal.SIGTERM)
        assert serve.wait(timeout=30) == 0
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
    bad = _cli(tmp_path, "serve", "--port", "70000")
    assert bad.returncode == 2 and "1..65535" in bad.stderr
