"""The in-process keyspace and script twins read numbers as the server and its Lua do
(agent_memory.core.numbers), checked against a real Valkey."""

from __future__ import annotations

import math
import uuid

import pytest
import valkey

from agent_memory.backends.inprocess import InProcessClient, Keyspace
from agent_memory.core.numbers import c_float, lua_number, lua_text, server_int
from tests.conftest import ServerInfo

# What Python's int() or float() reads and the server's or Lua's parser does not (or
# the other way round), and the edges of the 64-bit range.
TEXTS = [
    "5", "-5", "0", " 5", "5 ", "1_0", "-0", "+5", "007", "\u0661\u0662", "", "-", "0x10",
    "1.", ".5", "1e3", "inf", "-inf", "nan", "infinity", "1e400", "\t5\n", "0x", "1e",
    "9223372036854775807", "-9223372036854775808", "9223372036854775808",
    "-9223372036854775809", "99999999999999999999", "0X1p4", "+.5", "0x1.8", "nan(12)",
]  # fmt: skip


def _outcome(run: object, *args: object) -> object:
    try:
        return ("ok", run(*args))  # type: ignore[operator]
    except Exception:  # noqa: BLE001 - whether it fails is compared, not how
        return ("error", None)


@pytest.mark.parametrize("value", TEXTS)
def test_the_keyspace_reads_integers_as_the_server_does(
    plain_server: ServerInfo, value: str
) -> None:
    """HINCRBY and INCRBY on a damaged stored value, and with a damaged increment, and
    PEXPIRE with a damaged TTL: the same reply or refusal in-process as on the server."""
    client = valkey.Valkey.from_url(plain_server.url, decode_responses=True)
    twin = InProcessClient(Keyspace())
    h, s, e = (f"num{uuid.uuid4().hex[:10]}:{x}" for x in "hse")
    try:
        outcomes = []
        for run in (client.execute_command, twin.execute_command):
            run("HSET", h, "f", value)
            run("SET", s, value)
            run("SET", e, "x")
            outcomes.append([
                _outcome(run, "HINCRBY", h, "f", "1"),
                _outcome(run, "HINCRBY", h, "g", value),
                _outcome(run, "INCRBY", s, "1"),
                _outcome(run, "INCRBY", h + "n", value),
                _outcome(run, "PEXPIRE", e, value),
            ])  # fmt: skip
        assert outcomes[1] == outcomes[0]
    finally:
        client.delete(h, s, e, h + "n")
        client.close()


@pytest.mark.parametrize("value", TEXTS)
def test_lua_tonumber_is_read_as_the_server_reads_it(plain_server: ServerInfo, value: str) -> None:
    client = valkey.Valkey.from_url(plain_server.url, decode_responses=True)
    try:
        lua = client.eval(
            "local n = tonumber(ARGV[1]); if n == nil then return 'nil' end; return tostring(n)",
            0, value,
        )  # fmt: skip
    finally:
        client.close()
    number = lua_number(value)
    assert (lua_text(number) if number is not None else "nil") == lua


def test_server_int_is_string2ll() -> None:
    assert server_int("0") == 0
    assert server_int("-9223372036854775808") == -(2**63)
    for text in ("-0", "+1", "01", " 1", "1 ", "1_0", "\u0661", "", "-", "9223372036854775808"):
        assert server_int(text) is None


def test_c_float_reads_a_whole_string_as_strtod() -> None:
    assert c_float("0x10") == 16.0
    assert c_float("1e400") == math.inf
    assert c_float("-INFINITY") == -math.inf
    assert math.isnan(c_float("nan") or 0.0)
    for text in (" 1", "1 ", "1_0", "\u0661", "", ".", "0x", "1e"):
        assert c_float(text) is None
    assert lua_number(" 1\t") == 1.0
    assert lua_number("5\x00junk") == 5.0
