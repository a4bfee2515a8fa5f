"""A deadline for a whole urllib request, where urllib's own ``timeout`` bounds each step.

``urlopen(..., timeout=t)`` bounds connecting and each socket read, so a server that sends
one byte a little faster than ``t`` keeps a request going as long as it likes. The
handlers here turn a request's ``timeout`` into a deadline taken when the connection is
opened: connecting, sending, and every read of the status line, headers and body wait
only for the time left, and a step begun after the deadline fails at once. Either way the
caller sees :class:`TimeoutError`, as from urllib's own timeouts.

Not bounded, as before: the name lookup (``getaddrinfo`` takes no timeout), and a TLS
handshake whose server drips its records (each handshake read waits at most the time
left when connecting began).
"""

from __future__ import annotations

import functools
import http.client
import io
import socket
import time
import urllib.request
from collections.abc import Callable
from typing import Any


class Deadline:
    """A moment on a monotonic clock, ``seconds`` from construction."""

    __slots__ = ("_at", "_clock")

    def __init__(self, seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._at = clock() + seconds

    def remaining(self) -> float:
        """The seconds left, always positive.

        Raises:
            TimeoutError: the deadline has passed.
        """
        left = self._at - self._clock()
        if left <= 0:
            # 0 would put the socket in non-blocking mode, not fail it.
            raise TimeoutError("the deadline of the request has passed")
        return left


class _DeadlineReader(io.RawIOBase):
    """A socket's raw file whose every read waits only until the deadline."""

    def __init__(self, raw: io.RawIOBase, sock: socket.socket, deadline: Deadline) -> None:
        super().__init__()
        self._raw = raw
        self._sock = sock
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(self._deadline.remaining())
        return self._raw.readinto(buffer)

    def fileno(self) -> int:
        return self._raw.fileno()

    def close(self) -> None:
        # The socket file holds a reference that keeps the socket open after urllib
        # closes the connection; closing it here releases the socket.
        self._raw.close()
        super().close()


def _response_class(deadline: Deadline) -> type[http.client.HTTPResponse]:
    class DeadlineResponse(http.client.HTTPResponse):
        def __init__(self, sock: socket.socket, *args: Any, **kwargs: Any) -> None:
            super().__init__(sock, *args, **kwargs)
            # Nothing has been read yet: the buffer is empty and can be rebuilt around
            # the bounded reader (the raw file keeps the socket's reference count).
            self.fp = io.BufferedReader(_DeadlineReader(self.fp.detach(), sock, deadline))

    return DeadlineResponse


class _DeadlineHTTPConnection(http.client.HTTPConnection):
    """An HTTP connection whose connect, send and response reads share one deadline."""

    def __init__(self, *args: Any, deadline: Deadline, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline = deadline
        # Also reads a proxy's answer to CONNECT, which goes through response_class.
        self.response_class = _response_class(deadline)

    def connect(self) -> None:
        self.timeout = self._deadline.remaining()
        super().connect()

    def send(self, data: Any) -> None:
        if self.sock is not None:  # else send() connects, with the time left
            # Since Python 3.5 the timeout bounds a whole sendall, not each chunk.
            self.sock.settimeout(self._deadline.remaining())
        super().send(data)


_DEADLINE_CLASSES: dict[type[http.client.HTTPConnection], type[_DeadlineHTTPConnection]] = {
    http.client.HTTPConnection: _DeadlineHTTPConnection
}

if hasattr(http.client, "HTTPSConnection"):  # Python built without ssl has no HTTPS

    class _DeadlineHTTPSConnection(_DeadlineHTTPConnection, http.client.HTTPSConnection):
        """An HTTPS connection under one deadline (the TLS handshake: see the module)."""

    _DEADLINE_CLASSES[http.client.HTTPSConnection] = _DeadlineHTTPSConnection


def _under_deadline(http_class: Any, req: urllib.request.Request) -> Any:
    """``http_class`` bound to a deadline ``req.timeout`` from now, if it has a timeout."""
    timeout: object = req.timeout
    deadline_class = _DEADLINE_CLASSES.get(http_class)
    # None means no timeout; urllib's "socket default" is a sentinel that is no number.
    if deadline_class is None or isinstance(timeout, bool) or not isinstance(timeout, int | float):
        return http_class
    return functools.partial(deadline_class, deadline=Deadline(timeout))


class DeadlineHTTPHandler(urllib.request.HTTPHandler):
    """:class:`urllib.request.HTTPHandler` with ``timeout`` bounding the whole request."""

    def do_open(
        self, http_class: Any, req: urllib.request.Request, **http_conn_args: Any
    ) -> http.client.HTTPResponse:
        return super().do_open(_under_deadline(http_class, req), req, **http_conn_args)


_HANDLERS: list[type[urllib.request.BaseHandler]] = [DeadlineHTTPHandler]

if hasattr(urllib.request, "HTTPSHandler"):

    class DeadlineHTTPSHandler(urllib.request.HTTPSHandler):
        """:class:`urllib.request.HTTPSHandler` with ``timeout`` bounding the whole request."""

        def do_open(
            self, http_class: Any, req: urllib.request.Request, **http_conn_args: Any
        ) -> http.client.HTTPResponse:
            return super().do_open(_under_deadline(http_class, req), req, **http_conn_args)

    _HANDLERS.append(DeadlineHTTPSHandler)


def deadline_handlers() -> list[urllib.request.BaseHandler]:
    """Handlers for :func:`urllib.request.build_opener` that replace the HTTP(S) defaults."""
    return [handler() for handler in _HANDLERS]
