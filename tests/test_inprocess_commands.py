"""The in-process keyspace answers the plain commands as a real Valkey does: the same
reply, or a refusal where the server refuses (a user's unit test trusts its answers)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import valkey

from agent_memory.backends.inprocess import InProcessClient, Keyspace
from tests.conftest import ServerInfo


def _outcome(run: Any, *args: object) -> object:
    try:
        return ("ok", run(*args))
    except Exception:  # noqa: BLE001 - whether it fails is compared, not how
        return ("error", None)


@pytest.fixture
def both(plain_server: ServerInfo) -> Iterator[tuple[Any, Any, str]]:
    """A real client and an in-process one (replies decoded alike), and a key prefix."""
    client = valkey.Valkey.from_url(plain_server.url, decode_responses=True)
    prefix = f"cmd{uuid.uuid4().hex[:10]}:"
    try:
        yield client.execute_command, InProcessClient(Keyspace()).execute_command, prefix
    finally:
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)
        client.close()


def _compare(
    both: tuple[Any, Any, str], setup: list[tuple[Any, ...]], probes: list[tuple[Any, ...]]
) -> None:
    real, twin, prefix = both
    outcomes = []
    for run in (real, twin):
        for args in setup:
            run(args[0], prefix + args[1], *args[2:])
        outcomes.append([_outcome(run, p[0], prefix + p[1], *p[2:]) for p in probes])
    for probe, got, want in zip(probes, outcomes[1], outcomes[0], strict=True):
        assert got == want, probe


RANGE_PROBES = [
    ("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1", "2"),
    ("ZRANGEBYSCORE", "z", "(0", "+inf", "LIMIT", "0", "-1"),
    ("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "-1", "2"),
    ("ZRANGEBYSCORE", "z", "-inf", "+inf", "LIMIT", "1"),
    ("ZRANGE", "z", "(0", "+inf", "BYSCORE", "LIMIT", "1", "2"),
    ("ZRANGE", "z", "(0", "-inf", "BYSCORE", "REV", "LIMIT", "0", "1"),
    ("ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV"),
    ("ZRANGE", "z", "-inf", "+inf", "BYSCORE", "REV"),
    ("ZRANGE", "z", "0", "-1", "REV"),
    ("ZRANGE", "z", "0", "1", "LIMIT", "0", "1"),
    ("ZRANGE", "z", "0", "-1"),
]


def test_score_ranges_and_their_limit_as_on_the_server(both: tuple[Any, Any, str]) -> None:
    """``LIMIT`` of ZRANGEBYSCORE, and ZRANGE's BYSCORE / REV / LIMIT (sent by the
    LlamaIndex DB chat store), select what the server selects."""
    setup = [("ZADD", "z", "1", "a", "2", "b", "-1", "c", "3", "d", "2", "e")]
    _compare(both, setup, RANGE_PROBES)


def test_an_expired_key_stays_gone(both: tuple[Any, Any, str]) -> None:
    """PERSIST of a key whose TTL ran out (an EXPIRE of 0 or less) finds no key, as on
    the server: it does not bring the key back."""
    setup = [("SET", "k", "v"), ("PEXPIRE", "k", "-10"), ("SET", "j", "v"), ("EXPIRE", "j", "0")]
    _compare(both, setup, [("PERSIST", "k"), ("EXISTS", "k"), ("GET", "k"), ("TTL", "j")])


def test_values_the_server_refuses_are_refused_and_write_nothing(
    both: tuple[Any, Any, str],
) -> None:
    """A NaN score, a SET with a TTL of 0 or less, and an HSET with a field but no value
    are refused as by the server, and leave no key behind."""
    probes = [
        ("ZADD", "z", "nan", "m"),
        ("ZRANGEBYSCORE", "z", "nan", "+inf"),
        ("EXISTS", "z"),
        ("SET", "k", "v", "EX", "0"),
        ("SET", "k", "v", "PX", "-5"),
        ("EXISTS", "k"),
        ("HSET", "h", "f"),
        ("EXISTS", "h"),
    ]
    _compare(both, [], probes)


def test_zadd_and_expire_options_as_on_the_server(both: tuple[Any, Any, str]) -> None:
    """ZADD's GT / LT / CH and EXPIRE's NX / XX / GT / LT change what the server changes
    (they were ignored: every score and expiry was written), and combinations the server
    refuses are refused."""
    setup = [("ZADD", "z", "5", "a", "5", "b"), ("SET", "t", "v"), ("SET", "p", "v"),
             ("EXPIRE", "t", "100")]  # fmt: skip
    probes = [
        ("ZADD", "z", "GT", "CH", "3", "a", "7", "b", "1", "c"),
        ("ZADD", "z", "LT", "4", "a", "9", "b"),
        ("ZADD", "z", "XX", "CH", "5", "a", "2", "d"),
        ("ZADD", "z", "NX", "GT", "1", "a"),
        ("ZADD", "z", "NX", "XX", "1", "a"),
        ("ZADD", "z", "GT", "LT", "1", "a"),
        ("ZRANGE", "z", "0", "-1"),  # scores by range: their text differs (1.0 / 1)
        *(("ZRANGEBYSCORE", "z", score, score) for score in ("1", "2", "3", "4", "5", "7")),
        ("EXPIRE", "t", "50", "GT"),
        ("EXPIRE", "t", "500", "GT"),
        ("EXPIRE", "p", "500", "GT"),
        ("EXPIRE", "p", "500", "XX"),
        ("EXPIRE", "p", "500", "LT"),
        ("EXPIRE", "p", "900", "NX"),
        ("EXPIRE", "t", "50", "NX"),
        ("EXPIRE", "t", "50", "NX", "GT"),
        ("EXPIRE", "t", "50", "GT", "LT"),
        ("EXPIRE", "t", "50", "SOON"),
        ("TTL", "t"),
        ("TTL", "p"),
    ]
    _compare(both, setup, probes)
