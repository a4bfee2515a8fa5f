"""The secrets of a server URL, kept out of what is printed or raised.

A URL carries a password in its user info (``redis://user:pw@host``) or, as redis-py
and valkey-py accept it, in its query string (``redis://host/0?password=pw``). Both
are masked in a URL shown to a user and blanked out of messages that may quote them.
The user name is not a secret and is kept, except a lone token in the user info
(``redis://token@host``), which some deployments use as a password.
"""

from __future__ import annotations

import re
from urllib.parse import unquote, urlsplit, urlunsplit

MASK = "***"
#: Query parameters whose values are masked (case-insensitive): ``password`` is the one
#: the clients read; the others are names a secret goes by.
SECRET_PARAMETERS = frozenset({"password", "passwd", "pass", "ssl_password", "secret", "token"})
#: A secret this long is blanked wherever it appears in a message; a shorter one only
#: where it stands as a whole token (not inside a word), so a one-letter password does
#: not garble every word holding that letter.
MIN_SUBSTRING_SECRET = 8
_WORD = r"[0-9A-Za-z_]"


def _split(url: str) -> tuple[str, str] | None:
    """``(userinfo, rest)`` of ``url``'s authority, ``None`` without user info."""
    authority = url.split("://", 1)[-1].split("/", 1)[0].split("?", 1)[0]
    if "@" not in authority:
        return None
    userinfo, host = authority.rsplit("@", 1)
    return userinfo, host


def url_secrets(url: str) -> list[str]:
    """The secrets ``url`` holds, as written and percent-decoded, longest first: the
    password of its user info (or its lone token), the values of its secret query
    parameters."""
    found: set[str] = set()
    split = _split(url)
    if split is not None:
        user, sep, password = split[0].partition(":")
        found.add(password if sep else user)
    query = url.split("?", 1)[1].split("#", 1)[0] if "?" in url else ""
    for pair in query.split("&"):
        key, sep, value = pair.partition("=")
        if sep and unquote(key).strip().lower() in SECRET_PARAMETERS:
            found.add(value)
    found |= {unquote(s) for s in found} | {unquote(s.replace("+", " ")) for s in found}
    return sorted((s for s in found if s), key=len, reverse=True)


def mask_url(url: str) -> str:
    """``url`` with its password (user info or query parameter) replaced by ``***``;
    a lone user-info token is masked too (``redis://***@host``); the user name, host
    and other parameters are kept as written. ``<invalid URL>`` when it cannot be
    parsed."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid URL>"
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user, sep, _password = userinfo.partition(":")
        netloc = f"{user}:{MASK}@{host}" if sep else f"{MASK}@{host}"
    pairs = []
    for pair in parts.query.split("&") if parts.query else []:
        key, sep, _value = pair.partition("=")
        secret = sep and unquote(key).strip().lower() in SECRET_PARAMETERS
        pairs.append(f"{key}={MASK}" if secret else pair)
    return urlunsplit(parts._replace(netloc=netloc, query="&".join(pairs)))


def redact(message: str, url: str | None) -> str:
    """``message`` with the secrets of ``url`` blanked out: the URL itself, where
    quoted whole, becomes :func:`mask_url`'s form; then each secret of
    :data:`MIN_SUBSTRING_SECRET` characters or more is replaced wherever it appears,
    a shorter one only where it stands as a whole token (no letter, digit or ``_``
    either side). The user name is kept."""
    if not url:
        return message
    message = message.replace(url, mask_url(url))
    for secret in url_secrets(url):
        if len(secret) >= MIN_SUBSTRING_SECRET:
            message = message.replace(secret, MASK)
        else:
            pattern = f"(?<!{_WORD}){re.escape(secret)}(?!{_WORD})"
            message = re.sub(pattern, MASK, message)
    return message
