"""How a server and its Lua read numbers from strings (the in-process twins, cache stats).

Pure functions, checked against a real Valkey (tests/test_twins.py): Python's ``int``
and ``float`` accept what the server refuses (spaces, ``_`` separators, ``+``, leading
zeros, Unicode digits) and refuse what Lua accepts (hexadecimal), so the in-process
keyspace and script twins read numbers only through these.
"""

from __future__ import annotations

import math
import re

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1

_SERVER_INT = re.compile(r"-?[1-9][0-9]*|0", re.ASCII)
# What C's strtod reads as a whole string: decimal and hexadecimal forms, inf, nan.
_C_FLOAT = re.compile(
    r"[+-]?(?:"
    r"(?P<hex>0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?)"
    r"|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
    r"|(?i:inf(?:inity)?)"
    r"|(?P<nan>(?i:nan)(?:\([0-9A-Za-z_]*\))?)"
    r")",
    re.ASCII,
)
_C_SPACE = " \t\n\v\f\r"


def server_int(raw: str) -> int | None:
    """``raw`` as the server's ``string2ll`` reads it (INCRBY, HINCRBY, PEXPIRE...):
    ASCII ``-?[1-9][0-9]*`` or ``0`` within 64 bits; ``None`` otherwise (no sign ``+``,
    no spaces, no leading zeros, no ``-0``)."""
    if _SERVER_INT.fullmatch(raw) is None:
        return None
    value = int(raw)
    return value if INT64_MIN <= value <= INT64_MAX else None


def c_float(raw: str) -> float | None:
    """``raw`` as C's ``strtod`` reads a whole string with nothing around it (the
    server's ``string2ld``, HINCRBYFLOAT): decimal or hexadecimal, ``inf``, ``nan``;
    ``None`` otherwise. Out of range reads as an infinity (a float, not a long double:
    the server keeps ``1e400`` finite)."""
    match = _C_FLOAT.fullmatch(raw)
    if match is None:
        return None
    if match.group("nan") is not None:
        return math.nan
    if match.group("hex") is not None:
        return float.fromhex(raw)
    return float(raw)


def lua_number(raw: str) -> float | None:
    """``tonumber(raw)`` in the server's Lua (5.1): :func:`c_float` of the text before
    any NUL, C whitespace around it allowed; ``None`` (Lua's nil) otherwise."""
    text = raw.split("\0", 1)[0].strip(_C_SPACE)
    return c_float(text)


def lua_text(number: float) -> str:
    """A Lua number as a string (``tostring``, or passed to ``redis.call``): ``%.14g``."""
    if math.isnan(number):
        return "nan" if math.copysign(1.0, number) > 0 else "-nan"
    return f"{number:.14g}"


def string2ld_rejects(raw: str) -> bool:
    """Whether HINCRBYFLOAT refuses ``raw`` as a stored value or an increment."""
    value = c_float(raw)
    return value is None or math.isnan(value)
