"""Pure helpers of the OpenAI-compatible embedder: HTTP status mapping, response parsing.

No I/O happens here except reading an error body already received; everything is
testable with canned bytes.
"""

from __future__ import annotations

import base64
import http.client
import json
from functools import cache
from typing import TYPE_CHECKING, Any

from agent_memory.errors import (
    AgentMemoryError,
    InvalidInputError,
    OperationTimeoutError,
    ReplyParseError,
    ServerResponseError,
    ServerUnavailableError,
)

if TYPE_CHECKING:
    import urllib.request

_DETAIL_CHARS = 300


@cache
def opener() -> urllib.request.OpenerDirector:
    """The shared urllib opener: environment proxies, redirects refused, and ``timeout``
    a deadline for the whole request (see :mod:`._deadline`)."""
    import urllib.request

    from agent_memory.embedders._deadline import deadline_handlers

    class _NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None  # surfaces as an HTTPError with the 3xx status

    return urllib.request.build_opener(_NoRedirect, *deadline_handlers())


def status_error(status: int, detail: str) -> AgentMemoryError:
    """The library exception for an HTTP error status (``detail``: the server's words)."""
    msg = f"embedding server answered HTTP {status}" + (f": {detail}" if detail else "")
    if status in (400, 413, 422):
        return InvalidInputError(msg)
    if status in (408, 504):
        return OperationTimeoutError(msg)
    if status in (429, 502, 503):
        return ServerUnavailableError(msg)
    if status in (401, 403):
        return ServerResponseError(f"{msg} (check the api_key)", command="embeddings")
    return ServerResponseError(msg, command="embeddings")


def _decode_vector(raw: object) -> list[float]:
    if isinstance(raw, str):  # encoding_format=base64: little-endian float32
        import numpy as np

        try:
            data = base64.b64decode(raw, validate=True)
            vec: list[float] = np.frombuffer(data, dtype="<f4").astype(float).tolist()
        except ValueError as exc:
            raise ReplyParseError("embedding is not valid base64 float32 data") from exc
        return vec
    if not isinstance(raw, list) or not all(
        isinstance(x, (int, float)) and not isinstance(x, bool) for x in raw
    ):
        raise ReplyParseError("embedding is not a list of numbers")
    try:
        return [float(x) for x in raw]
    except OverflowError as exc:  # a JSON integer beyond any float
        raise ReplyParseError("embedding holds a number too large for a float") from exc


def parse_response(body: bytes, count: int) -> list[list[float]]:
    """Parse an ``/embeddings`` response body into ``count`` raw vectors, in input order.

    Raises:
        ReplyParseError: the body is not JSON or not the expected shape.
    """
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, ValueError) as exc:
        raise ReplyParseError("embedding server answered with invalid JSON") from exc
    except RecursionError as exc:  # nested deeper than the decoder recurses
        raise ReplyParseError("embedding server answered with JSON nested too deep") from exc
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list) or not all(isinstance(d, dict) for d in data):
        raise ReplyParseError("embedding response has no 'data' list of objects")
    if len(data) != count:
        raise ReplyParseError(f"embedding response has {len(data)} vectors for {count} inputs")
    indices = [d.get("index", i) for i, d in enumerate(data)]
    if not all(type(i) is int for i in indices) or sorted(indices) != list(range(count)):
        raise ReplyParseError("embedding response indices are not 0..n-1")
    ordered = sorted(zip(indices, data, strict=True), key=lambda p: p[0])
    return [_decode_vector(d.get("embedding")) for _, d in ordered]


def error_detail(exc: Any) -> str:
    try:
        raw = exc.read(4096)
    except (OSError, http.client.HTTPException):
        return ""
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else ""
    message = _json_message(text)
    return " ".join((message if message is not None else text).split())[:_DETAIL_CHARS]


def _json_message(text: str) -> str | None:
    """The ``error.message`` of an OpenAI-style JSON error body; None for other bodies."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError):
        return None  # not JSON (or nested too deep to read): the caller shows the raw text
    err = doc.get("error", doc) if isinstance(doc, dict) else doc
    message = err.get("message", err) if isinstance(err, dict) else err
    return str(message)
