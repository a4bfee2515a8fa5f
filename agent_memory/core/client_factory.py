"""Building and closing clients of the ``valkey`` and ``redis`` packages.

:func:`client_from_url` picks the package a URL's scheme names (falling back to the
other one), applies the library's default socket timeouts and checks the client's
options before the first command; the ``close_*`` functions release a client of either
package, mapping its errors like every other command.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from agent_memory.core.clients import is_async_client, map_client_errors
from agent_memory.errors import InvalidInputError

_DEFAULT_TIMEOUTS = {"socket_timeout": 10.0, "socket_connect_timeout": 5.0}


def client_from_url(url: str, *, asyncio: bool, **kwargs: Any) -> Any:
    """Build a client from a URL.

    ``valkey://``/``valkeys://``/``unix://`` use the ``valkey`` package (falling back to
    ``redis`` when it is not installed); ``redis://``/``rediss://`` use ``redis``
    (falling back to ``valkey``). Socket timeouts default to 10 s (connect 5 s); pass
    ``socket_timeout=None`` for an explicitly unbounded wait.

    Raises:
        InvalidInputError: the URL scheme is not supported.
    """
    if not isinstance(url, str):
        raise InvalidInputError(f"url must be a str, got {type(url).__name__}", field="url")
    try:
        scheme = urlsplit(url).scheme.lower()
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"invalid URL: {_redacted(exc, url)}", field="url") from None
    if scheme not in {"valkey", "valkeys", "redis", "rediss", "unix"}:
        raise InvalidInputError(f"unsupported URL scheme {scheme!r}", field="url")
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
            _check_connection_options(client)
            return client
        except (TypeError, ValueError) as exc:
            # ``from None``: the client's message may quote the URL, credentials included.
            raise InvalidInputError(
                f"invalid URL or client option: {_redacted(exc, url)}", field="url"
            ) from None
    raise InvalidInputError(
        "neither the 'valkey' nor the 'redis' package can be imported", field="url"
    ) from last_error


def _check_connection_options(client: Any) -> None:
    """Build (without connecting) one connection the way the client's pool will, so an
    unknown or ill-typed client option fails now, not at the first command.

    Raises:
        TypeError, ValueError: what the connection class raises for a bad option.
    """
    pool = getattr(client, "connection_pool", None)
    if pool is not None:
        pool.connection_class(**pool.connection_kwargs)


def _redacted(exc: BaseException, url: object) -> str:
    """The message of ``exc`` with the URL's user and password blanked out."""
    message = str(exc)
    if isinstance(url, str) and "@" in url:
        userinfo = url.split("://", 1)[-1].split("@", 1)[0]
        for secret in {userinfo, *userinfo.split(":", 1)}:
            if secret:
                message = message.replace(secret, "***")
    return message


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


def close_sync_client(client: Any) -> None:
    """Close a blocking client of either package."""
    with map_client_errors("close"):
        client.close()
