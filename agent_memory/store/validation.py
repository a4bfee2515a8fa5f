"""Validate user input before anything is written (pure; raises InvalidInputError)."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent_memory.core.checks import check_str, check_ttl_seconds
from agent_memory.core.names import check_name_apart
from agent_memory.errors import InvalidInputError
from agent_memory.schema.types import Scope

MAX_TAGS = 64
MAX_TAG_CHARS = 256
MAX_METADATA_BYTES = 64 * 1024
MAX_TIMESTAMP_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z, the last instant a ``datetime`` holds: the CLI and the MCP
tools show a memory's times as datetimes, which fail beyond it."""
MAX_COUNT = 2**53
"""The largest count a restored memory may carry: the scripts add to counts as Lua
numbers (doubles), exact up to here, and ``HINCRBY`` stays far from its 64-bit limit."""
_NAME = re.compile(r"[A-Za-z0-9_.\-:]{1,128}")
_SHOWN_BITS = 128


def shown(value: object) -> str:
    """``value`` for an error message: an integer too long to print (Python refuses past
    4300 digits, and a 400-digit number helps nobody) is told by its size."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > _SHOWN_BITS:
        return f"an integer of {value.bit_length()} bits"
    return repr(value)[:60]


def _as_float(value: int | float) -> float:
    try:
        return float(value)
    except OverflowError:  # an int beyond any float (a JSON 1e400 written as digits)
        return math.inf


def check_scope(scope: object) -> Scope | None:
    """``scope`` when it is a :class:`Scope` or ``None``."""
    if scope is not None and not isinstance(scope, Scope):
        raise InvalidInputError(
            f"scope must be a Scope or None, got {type(scope).__name__}", field="scope"
        )
    return scope


def require_scope(scope: object) -> Scope:
    """``scope`` when it is a :class:`Scope` (no default meaning for ``None`` here)."""
    if not isinstance(scope, Scope):
        raise InvalidInputError(f"scope must be a Scope, got {type(scope).__name__}", field="scope")
    return scope


def check_name(name: object) -> str:
    """Store names become key prefixes and index names: no hash tags, no spaces, and no
    name whose keys another component's keys could be or lie under
    (:func:`~agent_memory.core.names.check_name_apart`).

    Every key of store ``name`` starts with ``{name}:``: with ``:mem`` followed by ``:``
    or at its end (``a:mem``, ``a:mem:b``) its memories lie under store ``a``'s index
    prefix ``a:mem:`` and ``a`` would recall them; with ``:session`` so (``x:session``)
    its index prefix ``x:session:mem:`` and every key would be threads of
    ``SessionStore("x")``; ending with ``:tool``, a memory whose id is 64 hex digits
    would be a tool entry of ``ToolCache("x")``.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise InvalidInputError(
            "name must be 1-128 characters of letters, digits, '_', '.', '-' or ':' "
            f"(no braces, which would be a cluster hash tag); got {name!r}",
            field="name",
        )
    # memory ids may be 64 hex digits: hex_keys
    check_name_apart(name, hex_keys=True)
    return name


def check_text(value: object, *, field: str, max_bytes: int) -> str:
    """Non-empty valid Unicode text within ``max_bytes`` UTF-8 bytes, no control characters."""
    return check_str(value, field=field, non_blank=True, max_bytes=max_bytes, no_controls=True)


def check_optional_text(value: object, *, field: str, max_bytes: int = 1024) -> str | None:
    return None if value is None else check_text(value, field=field, max_bytes=max_bytes)


def check_importance(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(
            f"importance must be a number in [0, 1], got {type(value).__name__}",
            field="importance",
        )
    result = _as_float(value)
    if not math.isfinite(result) or not 0.0 <= result <= 1.0:
        raise InvalidInputError(
            f"importance must be in [0, 1], got {shown(value)}", field="importance"
        )
    return result


def check_ttl(value: object) -> float | None:
    """TTL in seconds: ``None`` (no expiry) or a finite number in (0, 10 years] (the one
    check the cache tiers share: :func:`agent_memory.core.checks.check_ttl_seconds`)."""
    return check_ttl_seconds(value)


def check_tags(tags: object) -> tuple[str, ...]:
    """A list of distinct non-empty strings (order kept, duplicates dropped)."""
    if tags is None:
        return ()
    # A mapping iterates as its keys: its values would be dropped without a word.
    if isinstance(tags, (str, bytes, Mapping)) or not isinstance(tags, Iterable):
        raise InvalidInputError("tags must be a list of strings", field="tags")
    out: list[str] = []
    for tag in tags:
        if not isinstance(tag, str) or not tag or len(tag) > MAX_TAG_CHARS:
            raise InvalidInputError(
                f"each tag must be a non-empty str of at most {MAX_TAG_CHARS} characters, "
                f"got {tag!r}",
                field="tags",
            )
        try:
            tag.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InvalidInputError(f"tag {tag!r} is not valid Unicode", field="tags") from exc
        if tag not in out:
            out.append(tag)
    if len(out) > MAX_TAGS:
        raise InvalidInputError(f"at most {MAX_TAGS} tags per memory, got {len(out)}", field="tags")
    return tuple(out)


def check_metadata(metadata: object) -> str | None:
    """JSON-serialisable mapping with string keys; returns its JSON text."""
    if metadata is None:
        return None
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
        raise InvalidInputError("metadata must be a mapping with str keys", field="metadata")
    try:
        encoded = json.dumps(metadata, ensure_ascii=False, allow_nan=False, sort_keys=True)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(
            f"metadata is not JSON-serialisable: {exc}", field="metadata"
        ) from exc
    try:
        size = len(encoded.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            "metadata holds a string that is not valid Unicode (a lone surrogate)",
            field="metadata",
        ) from exc
    if size > MAX_METADATA_BYTES:
        raise InvalidInputError(
            f"metadata is over {MAX_METADATA_BYTES} bytes as JSON", field="metadata"
        )
    return encoded


def check_whole(value: object, *, field: str, low: int | None = 0, high: int) -> int:
    """A whole number in ``[low, high]`` (``low`` ``None``: no lower bound); a finite
    float is truncated, as the records of other tools may write ``1.7e12``.

    Raises:
        InvalidInputError: not a number, not finite, or out of range.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(
            f"{field} must be a number, got {type(value).__name__}", field=field
        )
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInputError(f"{field} must be a finite number, got {value}", field=field)
        value = int(value)
    if (low is not None and value < low) or value > high:
        bounds = f"in [{low}, {high}]" if low is not None else f"at most {high}"
        raise InvalidInputError(f"{field} must be {bounds}, got {shown(value)}", field=field)
    return value


def check_k(k: object, *, field: str = "k", maximum: int = 1000) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= maximum:
        raise InvalidInputError(f"{field} must be an int in [1, {maximum}], got {k!r}", field=field)
    return k


def check_threshold(value: object, field: str = "threshold") -> float:
    """A cosine distance in [0, 2]; ``field`` names the argument in the error."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(f"{field} must be a number in [0, 2]", field=field)
    result = _as_float(value)
    if not math.isfinite(result) or not 0.0 <= result <= 2.0:
        raise InvalidInputError(
            f"{field} is a cosine distance and must be in [0, 2], got {shown(value)}",
            field=field,
        )
    return result


def check_id(memory_id: object) -> str:
    if not isinstance(memory_id, str) or not re.fullmatch(r"[A-Za-z0-9_\-]{1,128}", memory_id):
        # shown(): a model may send megabytes as an id; the message is read back to it.
        raise InvalidInputError(f"not a memory id: {shown(memory_id)}", field="id")
    return memory_id


def check_ids(ids: object) -> list[str]:
    """A list of memory ids, in order; a bare string is refused, not split into
    characters."""
    if isinstance(ids, (str, bytes)) or not isinstance(ids, Iterable):
        raise InvalidInputError("ids must be a list of memory ids", field="ids")
    return [check_id(memory_id) for memory_id in ids]


def unit_vector(vector: Any, dim: int | None, *, field: str = "vector") -> NDArray[np.float32]:
    """Validate an embedding and scale it to unit length (float32).

    Raises:
        InvalidInputError: not a flat sequence of finite numbers, wrong dimension, or
            zero length.
    """
    common = type(vector) is list or isinstance(vector, np.ndarray)  # checked first: cheap
    if not common and (isinstance(vector, (str, bytes)) or not isinstance(vector, Sequence)):
        raise InvalidInputError(
            f"{field} must be a sequence of floats, got {type(vector).__name__}", field=field
        )
    try:
        array = np.asarray(vector, dtype=np.float64)
    except OverflowError as exc:  # an int beyond any float
        raise InvalidInputError(f"{field} contains a number too large", field=field) from exc
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{field} contains non-numeric values", field=field) from exc
    if array.ndim != 1 or array.size == 0:
        raise InvalidInputError(f"{field} must be a flat, non-empty sequence", field=field)
    if dim is not None and array.size != dim:
        raise InvalidInputError(
            f"{field} has {array.size} dimensions but the index has {dim}", field=field
        )
    # A NaN or infinite element, or an overflow, shows as a norm that is not finite,
    # told apart only then.
    with np.errstate(over="ignore", invalid="ignore"):
        norm = math.sqrt(float(np.dot(array, array)))
    if not math.isfinite(norm) and not np.all(np.isfinite(array)):
        raise InvalidInputError(f"{field} contains NaN or infinite values", field=field)
    if norm == 0.0 or not math.isfinite(norm):
        # Finite components whose squares overflow (near 1e308) or underflow (subnormal)
        # still have a direction: scaled by the largest first, the norm is in [1, sqrt(n)].
        peak = float(np.max(np.abs(array)))
        if peak == 0.0:
            raise InvalidInputError(f"{field} has zero length; cannot compute cosine", field=field)
        array = array / peak
        norm = math.sqrt(float(np.dot(array, array)))
    return (array / norm).astype(np.float32)
