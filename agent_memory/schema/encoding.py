"""Encode user values (scope ids, tags) into tokens that are safe in any TAG query.

valkey-search 1.0.0-1.0.2 has no working backslash escapes in tag values, so instead of
escaping we index a token that never needs escaping:

* a value made only of ASCII letters and digits is its own token, so memories written
  with plain ids stay readable and filterable by the BetterDB TypeScript library;
* any other value (spaces, punctuation, filter metacharacters, non-ASCII, emoji) becomes
  ``_h`` followed by a base32 BLAKE2b digest of its UTF-8 bytes.

Tokens that begin with ``_`` can never be raw values, so the reserved tokens below and
the digests cannot collide with a plain value, and no value can widen a filter: the
token alphabet is ``[A-Za-z0-9_]``. Raw values are stored alongside in JSON fields.
"""

from __future__ import annotations

import base64
import hashlib
import re

_PLAIN = re.compile(r"[A-Za-z0-9]+")
_TOKEN = re.compile(r"[A-Za-z0-9_]+")

DEFAULT_NAMESPACE_TOKEN = "_d"
"""Token of the default namespace (``Scope.namespace is None``)."""

SHARED_SESSION_TOKEN = "_s"
"""Session token of shared (not session-scoped) memories."""

NO_NAMESPACE_TOKEN = "_none"
"""A namespace token no memory has (reserved ``_`` token, not a digest): a search
that must match nothing names it."""

MAX_PLAIN = 64


def encode_value(value: str) -> str:
    """The TAG token for ``value`` (identity for short ASCII alphanumerics)."""
    if len(value) <= MAX_PLAIN and _PLAIN.fullmatch(value):
        return value
    digest = hashlib.blake2b(value.encode("utf-8"), digest_size=20).digest()
    return "_h" + base64.b32encode(digest).decode("ascii").rstrip("=").lower()


def namespace_token(namespace: str | None) -> str:
    """Token of a namespace; ``None`` is the default namespace."""
    return DEFAULT_NAMESPACE_TOKEN if namespace is None else encode_value(namespace)


def session_token(session_id: str | None) -> str:
    """Token of a session; ``None`` marks a shared memory."""
    return SHARED_SESSION_TOKEN if session_id is None else encode_value(session_id)


def is_token(text: str) -> bool:
    """True when ``text`` can appear unescaped inside ``{...}`` of a TAG query."""
    return bool(_TOKEN.fullmatch(text))
