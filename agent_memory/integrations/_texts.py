"""Text helpers the adapters share (pure)."""

from __future__ import annotations

import re

# What the store refuses in a memory's content: ASCII controls but tab, newline, return.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_SURROGATE = re.compile("[\ud800-\udfff]")


def clean_text(text: str) -> tuple[str, bool]:
    """``text`` with each control character the store refuses (ASCII controls but tab,
    newline and return) made a space and each lone surrogate U+FFFD, and whether any
    was (pure): one such message must not fail the store's write of all the others."""
    # a str holds astral characters whole: any surrogate code point in it is a lone one
    cleaned = _SURROGATE.sub("\ufffd", _CONTROL.sub(" ", text))
    return cleaned, cleaned != text


def fit_text(text: str, max_bytes: int) -> tuple[str, bool]:
    """``text`` cut to at most ``max_bytes`` UTF-8 bytes at a character boundary, and
    whether it was cut (pure)."""
    encoded = text.encode("utf-8", "surrogatepass")
    if len(encoded) <= max_bytes:
        return text, False
    # a cut inside a multi-byte character leaves a partial one at the end: dropped
    return encoded[:max_bytes].decode("utf-8", "ignore"), True


__all__ = ["clean_text", "fit_text"]
