"""Drive :mod:`benchmarks.quality.peer_quality` in the peer venv (``benchmarks/.peer-venv``,
git-ignored, shared with the speed harness) with ``BETTERDB_TELEMETRY=false``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.quality.data import Conversation
from benchmarks.quality.embedcache import embed_cached
from benchmarks.quality.metrics import Outcome, first_rank, summarize

HERE = Path(__file__).resolve().parent
VENV = HERE.parent / ".peer-venv"
PACKAGE = "betterdb-agent-memory==0.7.0"


def peer_python() -> Path:
    """The peer venv's interpreter, created and provisioned on first use."""
    python = VENV / "bin" / "python"
    probe = [str(python), "-c", "import betterdb_agent_memory, numpy, valkey"]
    if python.exists() and subprocess.run(probe, capture_output=True, check=False).returncode == 0:
        return python
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, PACKAGE, "numpy"], check=True)
    return python


def peer_version() -> str:
    code = "import importlib.metadata as m; print(m.version('betterdb-agent-memory'))"
    out = subprocess.run(
        [str(peer_python()), "-c", code], capture_output=True, text=True, check=False
    )
    return out.stdout.strip() or "?"


def run_peer(url: str, convs: Sequence[Conversation], embedder: Any) -> dict[str, Any]:
    """The peer on the same server, vectors, timestamps and questions as our store."""
    with tempfile.TemporaryDirectory(prefix="quality-peer-") as tmp:
        folder = Path(tmp)
        job: dict[str, Any] = {"url": url, "conversations": []}
        for conv in convs:
            texts = [t.content() for t in conv.turns] + [q.text for q in conv.questions]
            np.save(folder / f"{conv.id}.npy", embed_cached(embedder, texts))
            job["conversations"].append(
                {
                    "name": f"peer_locomo_{conv.id}",
                    "vectors": str(folder / f"{conv.id}.npy"),
                    "texts": texts,
                    "turns": [
                        {
                            "content": t.content(),
                            "speaker": t.speaker,
                            "dia_id": t.dia_id,
                            "created_ms": int(conv.session_times[t.session] * 1000),
                        }
                        for t in conv.turns
                    ],
                    "questions": [q.text for q in conv.questions],
                    "ask_ms": int(conv.end_time * 1000),
                }
            )
        (folder / "job.json").write_text(json.dumps(job))
        env = {**os.environ, "BETTERDB_TELEMETRY": "false"}
        subprocess.run(
            [str(peer_python()), str(HERE / "peer_quality.py"), str(folder / "job.json"),
             str(folder / "out.json")],
            check=True, env=env,
        )  # fmt: skip
        results = json.loads((folder / "out.json").read_text())
    metrics: dict[str, Any] = {}
    for key in ("cosine", "default", "default_nogate"):
        outcomes = [
            Outcome(q.category, first_rank(ranked, q.evidence))
            for conv in convs
            for q, ranked in zip(
                conv.questions, results[f"peer_locomo_{conv.id}"][key], strict=True
            )
        ]
        metrics[key] = summarize(outcomes)
    return {"version": peer_version(), "metrics": metrics}
