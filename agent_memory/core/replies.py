"""Normalise replies whatever the client package, protocol (RESP2/RESP3) or decoding.

Replies arrive as ``bytes`` or ``str`` (``decode_responses``), hashes as dicts (client
callbacks) or flat lists, numbers as ints, floats or their text. Parsers call these
helpers instead of assuming one shape; an unreadable shape raises
:class:`~agent_memory.errors.ReplyParseError`, never a bare ``TypeError``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any

from agent_memory.errors import AgentMemoryError, ReplyParseError, ServerResponseError


def text(value: Any) -> str:
    """A reply element as ``str`` (UTF-8 decoded when it is bytes)."""
    if type(value) is bytes:  # the common case first: a recall converts hundreds
        try:
            return str(value, "utf-8")
        except UnicodeDecodeError as exc:
            raise ReplyParseError(f"reply is not valid UTF-8: {exc}") from exc
    if isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ReplyParseError(f"reply is not valid UTF-8: {exc}") from exc
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    raise ReplyParseError(f"expected a string reply, got {type(value).__name__}")


def optional_text(value: Any) -> str | None:
    """Like :func:`text`, but ``None`` stays ``None``."""
    return None if value is None else text(value)


def lenient_text(value: Any) -> str | None:
    """Like :func:`optional_text`, but a value that is not text (not UTF-8, say) is
    ``None``: for fields whose corruption must not make a whole record unreadable."""
    try:
        return optional_text(value)
    except ReplyParseError:
        return None


def raw_bytes(value: Any) -> bytes:
    """A binary reply element as ``bytes``."""
    if isinstance(value, bytes):
        return value
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    if isinstance(value, str):
        # A decoding client hands us text only when the blob was valid UTF-8, so
        # encoding it again restores the exact bytes.
        return value.encode("utf-8")
    raise ReplyParseError(f"expected a binary reply, got {type(value).__name__}")


def integer(value: Any) -> int:
    """A reply element as ``int`` (accepts ints and their text)."""
    if type(value) is bytes:  # the common case first: a hash field's digits
        try:
            return int(value)
        except ValueError:
            return _integer_of_number(value)  # "1.0", "1e3": written as a float
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, (bytes, str)):
        try:
            return int(value)  # the common case: an integer's digits
        except ValueError:
            return _integer_of_number(value)  # "1.0", "1e3": written as a float
    return _integer_of_number(value)


def _integer_of_number(value: Any) -> int:
    try:
        return int(float(text(value)))
    except (ValueError, OverflowError) as exc:
        raise ReplyParseError(f"expected an integer reply, got {value!r}") from exc


def number(value: Any) -> float:
    """A reply element as a ``float`` (infinities accepted, NaN refused)."""
    if type(value) is bytes:  # the common case first: a hash field's text
        try:
            result = float(value)
        except ValueError as exc:
            raise ReplyParseError(f"expected a numeric reply, got {value!r}") from exc
        if math.isnan(result):
            raise ReplyParseError("numeric reply is NaN")
        return result
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            result = float(value)
        except OverflowError as exc:  # an int beyond a float, as a script could return
            raise ReplyParseError(f"numeric reply is out of range: {value!r:.40}") from exc
    else:
        try:
            result = float(value if isinstance(value, (bytes, str)) else text(value))
        except ValueError as exc:
            raise ReplyParseError(f"expected a numeric reply, got {value!r}") from exc
    if math.isnan(result):
        raise ReplyParseError("numeric reply is NaN")
    return result


_NAMES: dict[bytes, str] = {}
_MAX_NAMES = 4096


def name(value: Any) -> str:
    """:func:`text` of a map key; the decodings of byte keys are remembered (replies
    repeat the same few field names), up to a bound."""
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        known = _NAMES.get(value)
        if known is not None:
            return known
        decoded = text(value)
        if len(_NAMES) < _MAX_NAMES:
            _NAMES[value] = decoded
        return decoded
    return text(value)


def pairs(value: Any) -> dict[str, Any]:
    """A map reply (dict, or flat ``[k, v, k, v]`` list) as ``{str: raw value}``."""
    if type(value) is list or isinstance(value, tuple):  # the common shape, checked first
        if len(value) % 2:
            raise ReplyParseError(f"map reply has an odd number of elements ({len(value)})")
        # The common case: every name seen before (a search reply holds thousands).
        # zip() draws a name then its value from the one iterator; a name not in the
        # cache maps to None, and the general path below decodes (and remembers) it.
        flat = iter(value)
        try:
            known: dict[Any, Any] = dict(zip(map(_NAMES.get, flat), flat, strict=True))
        except TypeError:  # an unhashable key: name() below says what it is
            known = {None: None}
        if None not in known:
            return known
        return {name(k): v for k, v in zip(value[::2], value[1::2], strict=True)}
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {name(k): v for k, v in value.items()}
    if isinstance(value, list):
        return pairs(list(value))  # a list subclass
    raise ReplyParseError(f"expected a map reply, got {type(value).__name__}")


def raw_pairs(reply: Any) -> list[tuple[Any, Any]]:
    """A map reply (dict, or flat list) as its undecoded ``(name, value)`` pairs, for
    hashes whose field names another writer may have made unreadable."""
    if reply is None:
        return []
    if isinstance(reply, Mapping):
        return list(reply.items())
    if isinstance(reply, (list, tuple)) and len(reply) % 2 == 0:
        return list(zip(reply[::2], reply[1::2], strict=True))
    raise ReplyParseError(f"expected a map reply, got {type(reply).__name__}")


def error_text(value: BaseException) -> str:
    """Lower-cased message of an error reply, for loose matching."""
    return str(value).lower()


def raise_first_error(replies: Iterable[Any]) -> None:
    """Raise the first error among a batch's replies (a batch delivers errors as values;
    one the client did not translate becomes a :class:`ServerResponseError`)."""
    for reply in replies:
        if isinstance(reply, AgentMemoryError):
            raise reply
        if isinstance(reply, BaseException):
            raise ServerResponseError(str(reply)) from reply
