"""Key-name helpers shared by the adapters that build their own key layouts (pure)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

from agent_memory.cache.keys import check_name_for_segment
from agent_memory.core.names import check_name_apart
from agent_memory.errors import InvalidInputError


def digest(text: str, size: int) -> str:
    """``size`` hex digits of the SHA-256 of ``text`` (UTF-8)."""
    # surrogatepass: any str a framework hands over (lone surrogates included) has a digest
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:size]


def digest_of_parts(parts: Sequence[str], size: int = 32) -> str:
    """``size`` hex digits of the SHA-256 of the JSON array of ``parts`` (JSON keeps the
    parts apart: no two different lists of parts share a text)."""
    return digest(json.dumps(list(parts), ensure_ascii=False), size)


def check_name(name: object) -> str:
    """A key prefix of an adapter whose keys all follow a hash tag (the ADK session
    service, the checkpointer), validated: braces would open a hash tag of their own,
    and the name must not put its keys among another component's
    (:func:`~agent_memory.core.names.check_name_apart`; no key of theirs is a bare
    digest after a word, so a name ending with ``:tool`` is kept).

    Raises:
        InvalidInputError: not a non-empty ``str`` without braces, or a name
            :func:`~agent_memory.core.names.check_name_apart` refuses.
    """
    if not isinstance(name, str) or not name or "{" in name or "}" in name:
        raise InvalidInputError(
            f"name must be a non-empty str without braces, got {name!r}", field="name"
        )
    return check_name_apart(name, hex_keys=False)


def keys_after(found: Sequence[object], prefix: str) -> tuple[list[str], int]:
    """The rest of every key of a binary ``SCAN`` (``scan_keys(..., binary=True)``) that
    starts with ``prefix``, in the order found, and how many keys were not UTF-8 text
    (another writer's: skipped, for the caller to log and count) (pure)."""
    keys: list[str] = []
    unreadable = 0
    for raw in found:
        try:
            text = bytes(raw).decode("utf-8") if not isinstance(raw, str) else raw  # type: ignore[call-overload]
        except UnicodeDecodeError:
            unreadable += 1
            continue
        if text.startswith(prefix):
            keys.append(text[len(prefix) :])
    return keys, unreadable


__all__ = ["check_name", "check_name_for_segment", "digest", "digest_of_parts", "keys_after"]
