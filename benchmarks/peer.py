"""The peer libraries, installed from PyPI into their own venv and driven in a subprocess.

The peers are never a dependency of ``agent-memory``: the harness creates
``benchmarks/.peer-venv`` (git-ignored) on first use and runs
:mod:`benchmarks.peer_worker` with its interpreter, with ``BETTERDB_TELEMETRY=false``.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VENV = HERE / ".peer-venv"
PACKAGES = ("betterdb-agent-memory==0.7.0", "betterdb-agent-cache==0.12.0", "numpy")


def peer_python() -> Path:
    return VENV / "bin" / "python"


def compiled_parser() -> bool:
    """Whether this interpreter's ``valkey`` parses replies with ``libvalkey`` (the
    ``fast`` extra): the peer venv gets the same parser, so neither side is favoured."""
    return importlib.util.find_spec("libvalkey") is not None


def ensure_venv() -> Path:
    """Create the peer venv and install the peers (idempotent), with the same reply
    parser as this interpreter."""
    python = peer_python()
    fast = compiled_parser()
    modules = "betterdb_agent_memory, betterdb_agent_cache, numpy" + (", libvalkey" if fast else "")
    probe = [str(python), "-c", f"import {modules}"]
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(python), "-m", "pip", "-q", "--disable-pip-version-check"]
    if subprocess.run(probe, capture_output=True, check=False).returncode != 0:
        extra = ("libvalkey",) if fast else ()
        subprocess.run([*pip, "install", *PACKAGES, *extra], check=True)
    if not fast:
        subprocess.run([*pip, "uninstall", "-y", "libvalkey"], capture_output=True, check=False)
    return python


def peer_versions() -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json\n"
        "def v(p):\n"
        "    try:\n"
        "        return m.version(p)\n"
        "    except m.PackageNotFoundError:\n"
        "        return 'not installed'\n"
        "names = ('betterdb-agent-memory', 'betterdb-agent-cache',"
        " 'betterdb-valkey-search-kit', 'valkey', 'libvalkey')\n"
        "print(json.dumps({p: v(p) for p in names}))"
    )
    out = subprocess.run(
        [str(peer_python()), "-c", code], capture_output=True, text=True, check=False
    )
    return dict(json.loads(out.stdout)) if out.returncode == 0 else {}


class PeerError(RuntimeError):
    pass


class Peer:
    """One peer worker process; every call blocks until the worker answers."""

    def __init__(self, url: str, name: str, vectors: Path, queries: Path) -> None:
        env = {**os.environ, "BETTERDB_TELEMETRY": "false", "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [str(ensure_venv()), str(HERE / "peer_worker.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.call(
            {
                "op": "setup",
                "url": url,
                "name": name,
                "vectors": str(vectors),
                "queries": str(queries),
            }
        )

    def call(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        if not line:
            raise PeerError(f"peer worker exited (code {self.process.poll()})")
        reply: dict[str, Any] = json.loads(line)
        if "error" in reply:
            raise PeerError(f"peer worker failed on {request.get('op')}: {reply['error']}")
        return reply

    def load(self, start: int, stop: int, conc: int = 8) -> dict[str, Any]:
        return self.call({"op": "load", "start": start, "stop": stop, "conc": conc})

    def run(self, scenario: str, n: int, round_no: int, conc: int) -> dict[str, Any]:
        return self.call(
            {"op": "run", "scenario": scenario, "n": n, "round": round_no, "conc": conc}
        )

    def close(self) -> None:
        if self.process.poll() is None:
            with contextlib.suppress(PeerError, BrokenPipeError, ValueError):
                self.call({"op": "quit"})
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
