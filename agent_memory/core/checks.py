"""The one text check every user-supplied string goes through, and the one TTL check of
the memory store and the cache tiers (pure).

Each caller states its rules by keyword: the embedders accept any valid Unicode (an empty
text embeds), cache identifiers must be non-empty and short, a memory's content must
carry something besides whitespace, fit a byte budget and hold no control characters.
Whatever the rules, a rejected value raises :class:`InvalidInputError` naming the field.
"""

from __future__ import annotations

import math
import re

from agent_memory.errors import InvalidInputError

MAX_TTL_SECONDS = 10 * 365 * 24 * 3600
"""The longest TTL anything of the library sets: ten years."""

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def check_str(
    value: object,
    *,
    field: str,
    non_empty: bool = False,
    non_blank: bool = False,
    max_chars: int | None = None,
    max_bytes: int | None = None,
    no_controls: bool = False,
) -> str:
    """``value`` when it is a ``str`` of valid Unicode that meets the given rules.

    Args:
        value: what the user passed.
        field: the argument's name, used in the message and the exception.
        non_empty: reject ``""``.
        non_blank: reject text that is empty or only whitespace.
        max_chars: the most characters allowed.
        max_bytes: the most UTF-8 bytes allowed.
        no_controls: reject ASCII control characters other than tab, newline and return.

    Raises:
        InvalidInputError: not a ``str``, a lone surrogate, or a rule broken.
    """
    if not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a str, got {type(value).__name__}", field=field)
    if non_blank and not value.strip():
        raise InvalidInputError(f"{field} must not be empty or only whitespace", field=field)
    if non_empty and not value:
        raise InvalidInputError(f"{field} must not be empty", field=field)
    if max_chars is not None and len(value) > max_chars:
        raise InvalidInputError(f"{field} is longer than {max_chars} characters", field=field)
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{field} is not valid Unicode (lone surrogate at {exc.start})", field=field
        ) from exc
    if max_bytes is not None and size > max_bytes:
        raise InvalidInputError(
            f"{field} is {size} bytes of UTF-8, over the limit of {max_bytes}", field=field
        )
    if no_controls and _CONTROL.search(value):
        raise InvalidInputError(f"{field} contains control characters", field=field)
    return value


def check_ttl_seconds(value: object, *, field: str = "ttl") -> float | None:
    """A TTL in seconds: ``None`` (no expiry) or a finite number in (0, 10 years].

    Raises:
        InvalidInputError: not a number, not finite, not positive or over ten years.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidInputError(
            f"{field} must be a number of seconds or None, got {type(value).__name__}",
            field=field,
        )
    try:
        seconds = float(value)
    except OverflowError:  # an int beyond any float
        seconds = math.inf
    if not math.isfinite(seconds) or seconds <= 0 or seconds > MAX_TTL_SECONDS:
        raise InvalidInputError(
            f"{field} must be > 0 and at most {MAX_TTL_SECONDS} seconds, got {value!r:.40}",
            field=field,
        )
    return seconds
