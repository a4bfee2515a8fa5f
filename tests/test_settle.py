"""Commands that must follow a batch's scripts: the search that settles script writes on
valkey-search 1.0.x (when, and how), ``WAIT`` and change tokens, also when a script the
server did not know is sent again (pure: no server; ``tests/store/test_plain_writers.py``
runs the settling on every server)."""

from __future__ import annotations

import struct
from types import SimpleNamespace
from typing import Any

import pytest

from agent_memory.core.clients import _unknown_scripts
from agent_memory.core.effects import Batch, Command, command
from agent_memory.errors import ServerResponseError
from agent_memory.search.dialect import Dialect
from agent_memory.search.query import settle_search_args
from agent_memory.store.ops.settle import settle_commands

V1_0 = Dialect("valkey-search", (1, 0, 0))


@pytest.mark.parametrize(
    ("dialect", "defers"),
    [
        (V1_0, True),
        (V1_0.capped(), True),  # a server behaviour, whatever the dialect cap
        (Dialect("valkey-search", (1, 0, 3)), True),
        (Dialect("valkey-search", (1, 1, 0)), False),
        (Dialect("valkey-search", (1, 2, 1)), False),
        (Dialect("redisearch", (2, 10, 0)), False),
        (Dialect("none", (0, 0, 0)), False),
    ],
)
def test_only_valkey_search_1_0_defers_script_writes(dialect: Dialect, defers: bool) -> None:
    assert dialect.defers_script_writes is defers


def _ctx(**changes: Any) -> Any:
    values: dict[str, Any] = {
        "dialect": V1_0, "backend": SimpleNamespace(name="ft"), "dim": 3,
        "cluster": False,
    }  # fmt: skip
    values.update(changes)
    return SimpleNamespace(
        keys=SimpleNamespace(index="s:mem:idx"),
        settings=SimpleNamespace(cluster=values["cluster"]),
        dialect=values["dialect"],
        backend=values["backend"],
        dim=values["dim"],
    )


def test_the_settling_search_matches_nothing_and_follows_resent_scripts() -> None:
    (settle,) = settle_commands(_ctx())
    assert settle.after_scripts
    assert settle.args[:3] == (
        "FT.SEARCH", "s:mem:idx", "(@namespace:{_none})=>[KNN 1 @vector $vec AS __dist]"
    )  # fmt: skip
    assert settle.args[3:] == tuple(settle_search_args("s:mem:idx", 3)[2:])
    blob = settle.args[6]
    assert isinstance(blob, bytes) and struct.unpack("<3f", blob) == (1.0, 0.0, 0.0)
    assert settle.args[-4:] == ("0", "0", "DIALECT", "2")  # LIMIT 0 0: no documents


@pytest.mark.parametrize(
    "changes",
    [
        {"dialect": Dialect("valkey-search", (1, 2, 1))},
        {"dialect": None},  # before ensure_index
        {"backend": SimpleNamespace(name="portable")},
        {"backend": None},
        {"cluster": True},  # fanned-out searches do not reach the shards' queues
        {"dim": None},
    ],
)
def test_nothing_is_settled_elsewhere(changes: dict[str, Any]) -> None:
    assert settle_commands(_ctx(**changes)) == []


def test_a_script_sent_again_is_followed_by_what_must_come_after_it() -> None:
    noscript = ServerResponseError("NOSCRIPT No matching script")
    after = Command(("FT.SEARCH", "idx", "q"), after_scripts=True)
    b = Batch((
        command("HSET", "a", "f", "1"),
        Command(("EVAL", "return 1", "0")),
        Command(("FT.SEARCH", "idx", "between"), after_scripts=True),
        Command(("EVAL", "return 2", "0")),
        command("INCR", "n"),
        after,
    ))  # fmt: skip
    replies: list[Any] = ["ok", noscript, [0], 1, 2, [0]]
    assert _unknown_scripts(b, replies) == [1, 2, 5]  # in order: each after the script
    assert _unknown_scripts(b, ["ok", 1, [0], noscript, 2, [0]]) == [3, 5]  # 2 came before
    assert _unknown_scripts(b, ["ok", 1, [0], 1, 2, [0]]) == []  # all known: nothing


def test_a_wait_for_replicas_follows_resent_scripts() -> None:
    """A write batch's ``WAIT`` must run after the write it covers, also when the write's
    script is sent again (before, it ran between the unknown script and its resending,
    covering nothing: seen with ``MONITOR`` after a ``SCRIPT FLUSH``)."""
    from agent_memory.store.ops.durability import wait_commands

    ctx = SimpleNamespace(settings=SimpleNamespace(wait_replicas=1, wait_timeout_ms=300))
    (wait,) = wait_commands(ctx)  # type: ignore[arg-type]
    assert wait.args == ("WAIT", "1", "300") and wait.after_scripts
    noscript = ServerResponseError("NOSCRIPT No matching script")
    b = Batch((Command(("EVAL", "return 1", "0")), wait))
    assert _unknown_scripts(b, [noscript, 1]) == [0, 1]


def test_a_change_token_follows_resent_scripts() -> None:
    from agent_memory.schema.versions import bump

    token = bump("s:__mem_regver:_d")
    assert token.after_scripts and token.args[:2] == ("SET", "s:__mem_regver:_d")
    b = Batch((Command(("EVAL", "return 1", "0")), command("HINCRBY", "s", "n", "1"), token))
    noscript = ServerResponseError("NOSCRIPT No matching script")
    assert _unknown_scripts(b, [noscript, 1, "OK"]) == [0, 2]  # never the counter again
