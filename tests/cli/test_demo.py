"""``agent-memory demo`` with the embedder the global options name."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cli.conftest import unique

pytestmark = pytest.mark.integration


def test_demo_uses_embedder_and_dim_and_the_store_opens_with_them(
    cli: Any, search_url: str
) -> None:
    opts = ["--url", search_url, "--name", unique("demo"), "--embedder", "hashing", "--dim", "64"]
    demo = cli(*opts, "--json", "demo")
    assert demo.code == 0, demo.err
    assert demo.json()["embedder"] == "hashing (64 dimensions)"
    stats = cli(*opts, "--json", "stats")
    assert stats.code == 0, stats.err
    assert stats.json()["dim"] == 64
    listed = cli(*opts, "--json", "list", "--namespace", "demo")
    assert listed.code == 0 and listed.json()["total"] > 0
