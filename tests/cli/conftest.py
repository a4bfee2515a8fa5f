"""Helpers of the command-line tests: run ``main(argv)`` in process, seed a store."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from agent_memory import MemoryInput, Scope, SyncMemoryStore
from agent_memory.cli.main import main
from agent_memory.embedders import HashingEmbedder

MEMORIES = [
    ("The user prefers dark mode in every editor.", 0.8, ["prefs"], "assistant"),
    ("Deploys to production happen on Tuesdays.", 0.6, ["ops"], "assistant"),
    ("Ada is allergic to peanuts.", 1.0, ["health", "prefs"], "planner"),
]


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass
class Seeded:
    url: str
    name: str
    namespace: str
    ids: list[str]


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """``cli(*argv)`` runs the command in process and returns code, stdout, stderr.

    Tables are as wide as for a pipe with no ``$COLUMNS`` (some runners, pytest-xdist's
    workers among them, export ``COLUMNS=80``); tests of the width set it themselves."""
    monkeypatch.delenv("COLUMNS", raising=False)

    def run(*argv: str) -> Run:
        capsys.readouterr()
        try:
            code = main(list(argv))
        except SystemExit as exc:  # argparse usage errors and --help
            code = int(exc.code or 0)
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:10]}"


def seed(url: str, name: str, namespace: str, embed: Any = None) -> list[str]:
    """Remember :data:`MEMORIES` through the library; returns their ids in order."""
    with SyncMemoryStore.from_url(url, name=name, embed=embed or HashingEmbedder()) as store:
        store.ensure_index()
        return store.remember_many(
            [
                MemoryInput(content=c, importance=i, tags=t, scope=Scope(namespace, a))
                for c, i, t, a in MEMORIES
            ]
        )


@pytest.fixture
def search_url(servers: Any) -> str:
    return str(servers.get("valkey-redisearch").url)


@pytest.fixture
def plain_url(servers: Any) -> str:
    return str(servers.get("valkey").url)


@pytest.fixture
def seeded(search_url: str) -> Iterator[Seeded]:
    """Three memories in a fresh store and namespace on Valkey with search."""
    name, namespace = unique("cli"), unique("ns")
    ids = seed(search_url, name, namespace)
    yield Seeded(search_url, name, namespace, ids)
