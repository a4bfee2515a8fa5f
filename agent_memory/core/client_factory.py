"""Building and closing clients of the ``valkey`` and ``redis`` packages.

:func:`client_from_url` picks the package a URL's scheme names (falling back to the
other one), applies the library's default socket timeouts and checks the client's
options before the first command; the ``close_*`` functions release a client of either
package, mapping its errors like every other command.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

from agent_memory.core.clients import is_async_client, map_client_errors
from agent_memory.core.url_secrets import redact
from agent_memory.errors import InvalidInputError

_DEFAULT_TIMEOUTS = {"socket_timeout": 10.0, "socket_connect_timeout": 5.0}


def client_from_url(url: str, *, asyncio: bool, **kwargs: Any) -> Any:
    """Build a client from a URL.

    ``valkey://``/``valkeys://``/``unix://`` use the ``valkey`` package (falling back to
    ``redis`` when it is not installed); ``redis://``/``rediss://`` use ``redis``
    (falling back to ``valkey``). Socket timeouts default to 10 s (connect 5 s); pass
    ``socket_timeout=None`` for an explicitly unbounded wait.

    Raises:
        InvalidInputError: the URL scheme is not supported, or the client refuses the
            URL or an option (whatever it raises, its message with the URL's credentials
            blanked out); a timeout that is not a positive finite number or ``None``.
    """
    if not isinstance(url, str):
        raise InvalidInputError(f"url must be a str, got {type(url).__name__}", field="url")
    try:
        scheme = urlsplit(url).scheme.lower()
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"invalid URL: {_redacted(exc, url)}", field="url") from None
    if scheme not in {"valkey", "valkeys", "redis", "rediss", "unix"}:
        raise InvalidInputError(f"unsupported URL scheme {scheme!r}", field="url")
    _check_characters_and_database(url, scheme)
    options = {**_DEFAULT_TIMEOUTS, **kwargs}
    preferred = ["redis", "valkey"] if scheme.startswith("redis") else ["valkey", "redis"]
    last_error: ImportError | None = None
    for package in preferred:
        try:
            module = __import__(f"{package}.asyncio" if asyncio else package, fromlist=["x"])
        except ImportError as exc:
            last_error = exc
            continue
        cls = module.Valkey if package == "valkey" else module.Redis
        if package == "redis" and scheme.startswith("valkey"):
            url = "redis" + url[len("valkey") :]
        try:
            client = cls.from_url(url, **options)
        except Exception as exc:  # noqa: BLE001 - whatever the package raises for a bad option
            # ``from None``: the client's message may quote the URL, credentials included.
            raise InvalidInputError(
                f"invalid URL or client option: {_redacted(exc, url)}", field="url"
            ) from None
        _check_connection_options(client, url, given=kwargs)
        return client
    raise InvalidInputError(
        "neither the 'valkey' nor the 'redis' package can be imported", field="url"
    ) from last_error


def _check_characters_and_database(url: str, scheme: str) -> None:
    """Refuse what the client would only fail on at the first command (a lone surrogate,
    a control character: as if the server were unavailable) or ignore (a database path
    that is not a number: database 0 served instead).

    Raises:
        InvalidInputError: naming the problem, not the URL (it may hold credentials).
    """
    try:
        url.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidInputError(
            "url is not valid Unicode (a lone surrogate)", field="url"
        ) from None
    # urlsplit drops tab, CR and LF (a URL read from a file keeps working); others stay.
    if any((ord(ch) < 0x20 and ch not in "\t\r\n") or ch == "\x7f" for ch in url):
        raise InvalidInputError("url holds a control character", field="url")
    if scheme != "unix":
        database = unquote(urlsplit(url).path).replace("/", "")
        if database and not (database.isascii() and database.isdigit()):
            raise InvalidInputError(
                f"the URL's database {database!r:.40} is not a number (redis://host:port/0)",
                field="url",
            )


def _check_connection_options(client: Any, url: str, *, given: Mapping[str, Any]) -> None:
    """Check the timeouts and the retry policy the client's connections get (from the
    URL's query or from ``given``, the caller's options), then build (without
    connecting) one connection the way the client's pool will, so an unknown or
    ill-typed client option fails now, not at the first command.

    Raises:
        InvalidInputError: a timeout that is not a positive finite number or ``None``
            (``health_check_interval``: 0 too, which turns the checks off), a retry
            policy that is not one, or whatever the connection class raises for a bad
            option (its message with the URL's credentials blanked out).
    """
    pool = getattr(client, "connection_pool", None)
    if pool is None:
        return
    options = pool.connection_kwargs
    for option, least in _TIMEOUTS.items():
        if option in options:
            _check_seconds(option, options[option], least, given=given)
    retry = options.get("retry")
    if retry is not None and not callable(getattr(retry, "call_with_retry", None)):
        raise InvalidInputError(
            f"client option retry must be a Retry of the client package or None, got "
            f"{type(retry).__name__}",
            field="client_retry",
        )
    try:
        pool.connection_class(**options)
    except Exception as exc:  # noqa: BLE001 - whatever the package raises for a bad option
        raise InvalidInputError(
            f"invalid URL or client option: {_redacted(exc, url)}", field="url"
        ) from None


# Timeouts in seconds a connection takes, and whether 0 is allowed (> 0 if not).
_TIMEOUTS = {
    "socket_timeout": False,
    "socket_connect_timeout": False,
    "health_check_interval": True,
}


def _check_seconds(option: str, value: object, zero: bool, *, given: Mapping[str, Any]) -> None:
    field = f"client_{option}" if option in given else "url"
    if value is None:
        return
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            seconds = float(value)
        except OverflowError:  # an int beyond any float
            seconds = math.inf
        if math.isfinite(seconds) and (seconds > 0 or (zero and seconds == 0)):
            return
    bound = ">= 0" if zero else "> 0"
    raise InvalidInputError(
        f"client option {option} must be None or a finite number of seconds {bound}, "
        f"got {value!r:.40}",
        field=field,
    )


def _redacted(exc: BaseException, url: object) -> str:
    """The message of ``exc`` with the URL's password blanked out (user info or query)."""
    return redact(str(exc), url if isinstance(url, str) else None)


async def close_async_client(client: Any) -> None:
    """Close an asyncio client of either package (``aclose`` where it exists)."""
    closer = getattr(client, "aclose", None) or client.close
    with map_client_errors("close"):
        await closer()


def release_unused_client(client: Any) -> None:
    """Release a client built by :func:`client_from_url` that was never used (its
    owner's constructor refused its arguments). A blocking client may hold a connection
    already (``single_connection_client``) and is closed; an asyncio client opens none
    before its first awaited command, so there is nothing to release."""
    if not is_async_client(client):
        close_sync_client(client)


@contextlib.contextmanager
def released_on_failure(*clients: Any) -> Iterator[None]:
    """Release ``clients`` (built by :func:`client_from_url` for an owner being
    constructed) when the block fails, whatever it raises, then re-raise: an owner
    whose constructor refused its arguments never closes them."""
    try:
        yield
    except BaseException:
        for client in clients:
            release_unused_client(client)
        raise


def close_sync_client(client: Any) -> None:
    """Close a blocking client of either package."""
    with map_client_errors("close"):
        client.close()
