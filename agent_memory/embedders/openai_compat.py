"""An embedder for any server speaking the OpenAI ``/v1/embeddings`` API.

OpenAI, Azure-style gateways, Ollama (``http://localhost:11434/v1``), vLLM, LiteLLM,
llama.cpp's server and text-embeddings-inference all accept::

    POST {base_url}/embeddings
    {"model": "...", "input": ["text", ...]}

and answer ``{"data": [{"index": 0, "embedding": [...]}, ...]}``. This module uses only
the standard library (``urllib``), so it needs no extra. Redirects are not followed (a
redirect would resend the API key elsewhere), proxies come from the usual environment
variables, and there are no automatic retries: the caller decides.
"""

from __future__ import annotations

import http.client
import json
import math
import threading
from collections.abc import Sequence
from urllib.parse import urlsplit

from agent_memory._version import __version__
from agent_memory.embedders._http import error_detail, opener, parse_response, status_error
from agent_memory.embedders.base import (
    MAX_DIM,
    ThreadedAsyncMixin,
    check_dim,
    check_text,
    check_texts,
    finish_vectors,
)
from agent_memory.errors import (
    InvalidInputError,
    OperationTimeoutError,
    ServerResponseError,
    ServerUnavailableError,
)

_MAX_BATCH = 2048  # OpenAI's limit on inputs per request
_DIM_PROBE = "dimension probe"


_NUMBER_BYTES = 48
"""Room for one number of a vector in an answer: the longest float in JSON
(``-1.2345678901234567e-308``, 24 characters), its separator and the indentation of a
pretty-printed answer (base64 takes under 6)."""
_ITEM_BYTES = 1024
"""Room for the other fields of each vector's item (``object``, ``index``...)."""
_REST_BYTES = 1 << 20
"""Room for the rest of an answer (usage, model name, whitespace)."""
UNKNOWN_WIDTH = 4096
"""Vectors allowed for in an answer read before the dimension is known (given, or
learned from the first answer): as wide as this (one text: up to
:data:`~agent_memory.embedders.base.MAX_DIM`). Compact JSON of vectors about twice as
wide still fits; for wider models give ``dim``."""


def max_response_bytes(texts: int, dim: int | None = None) -> int:
    """The largest answer read for ``texts`` vectors of ``dim`` numbers (``None``: not
    known yet, :data:`UNKNOWN_WIDTH`): :data:`_NUMBER_BYTES` a number,
    :data:`_ITEM_BYTES` a vector and 1 MiB for the rest."""
    numbers = texts * dim if dim is not None else max(MAX_DIM, texts * UNKNOWN_WIDTH)
    return numbers * _NUMBER_BYTES + texts * _ITEM_BYTES + _REST_BYTES


def _announced_length(response: http.client.HTTPResponse) -> int | None:
    """The answer's ``Content-Length`` (None: absent or unreadable, e.g. chunked)."""
    raw = response.headers.get("Content-Length")
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


class OpenAICompatibleEmbedder(ThreadedAsyncMixin):
    """Embeddings from an OpenAI-compatible HTTP server (OpenAI, Ollama, vLLM, ...).

    Constructing one does no I/O. ``dim`` is discovered from the first response when
    not given (reading ``dim`` before any call sends one short probe text). Vectors are
    validated (count, dimension, finite) and L2-normalised here, whatever the server
    does. The API key is sent as ``Authorization: Bearer ...`` and never appears in
    ``repr()`` or in exception messages.

    Args:
        base_url: the API root, e.g. ``https://api.openai.com/v1`` or
            ``http://localhost:11434/v1`` (a URL ending in ``/embeddings`` is used as is).
        model: the model name the server expects.
        api_key: bearer token, or ``None`` to send no ``Authorization`` header.
        dim: the expected dimension; responses of another length are an error.
        timeout: seconds for each HTTP request as a whole: connecting, sending, and
            receiving the status, headers and complete body (a server answering slowly,
            however steadily, fails at the deadline). It applies per request, not per
            call: :meth:`embed` and the ``dim`` probe make one request, :meth:`embed_many`
            one per ``batch_size`` texts, each with its own ``timeout``. The name lookup
            is not bounded. ``None`` waits forever.
        batch_size: texts per request in :meth:`embed_many` (1 to 2048).
        embedder_id: override :attr:`id` (by default ``openai-compat:{model}@{url}``).

    Raises:
        InvalidInputError: an argument is invalid.
    """

    __slots__ = (
        "_api_key",
        "_base_url",
        "_batch_size",
        "_dim",
        "_endpoint",
        "_id",
        "_lock",
        "_model",
        "_timeout",
    )

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        dim: int | None = None,
        timeout: float | None = 30.0,
        batch_size: int = 64,
        embedder_id: str | None = None,
    ) -> None:
        try:
            parts = urlsplit(base_url) if isinstance(base_url, str) else None
            _ = None if parts is None else parts.port  # a port that is not a number
        except ValueError as exc:  # an unclosed IPv6 bracket, a bad port
            raise InvalidInputError(
                f"base_url is not a valid URL: {exc}", field="base_url"
            ) from None
        if parts is None or parts.scheme not in ("http", "https") or not parts.hostname:
            raise InvalidInputError("base_url must be an http(s) URL", field="base_url")
        if parts.username is not None or parts.password is not None or parts.query:
            raise InvalidInputError(
                "base_url must not carry credentials or a query (use api_key)", field="base_url"
            )
        if not isinstance(model, str) or not model.strip():
            raise InvalidInputError("model must be a non-empty str", field="model")
        if api_key is not None and (
            not isinstance(api_key, str) or not api_key or any(c in api_key for c in "\r\n")
        ):
            raise InvalidInputError("api_key must be a non-empty single-line str", field="api_key")
        if timeout is not None and (
            isinstance(timeout, bool)
            or not isinstance(timeout, (int, float))
            or not math.isfinite(timeout)
            or timeout <= 0
        ):
            raise InvalidInputError("timeout must be a positive number or None", field="timeout")
        if (
            isinstance(batch_size, bool)
            or not isinstance(batch_size, int)
            or not (1 <= batch_size <= _MAX_BATCH)
        ):
            raise InvalidInputError(
                f"batch_size must be an int in [1, {_MAX_BATCH}]", field="batch_size"
            )
        if embedder_id is not None and (not isinstance(embedder_id, str) or not embedder_id):
            raise InvalidInputError("embedder_id must be a non-empty str", field="embedder_id")
        root = parts._replace(fragment="").geturl().rstrip("/")
        self._base_url = root
        self._endpoint = root if root.endswith("/embeddings") else root + "/embeddings"
        self._model = model
        self._api_key = api_key
        self._dim = None if dim is None else check_dim(dim)
        self._timeout = None if timeout is None else float(timeout)
        self._batch_size = batch_size
        self._id = embedder_id or f"openai-compat:{model}@{root}"
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        key = "'***'" if self._api_key else "None"
        return (
            f"OpenAICompatibleEmbedder(base_url={self._base_url!r}, model={self._model!r}, "
            f"api_key={key}, dim={self._dim!r})"
        )

    @property
    def id(self) -> str:
        """``openai-compat:{model}@{base_url}`` unless ``embedder_id`` was given."""
        return self._id

    @property
    def model(self) -> str:
        """The model name sent to the server."""
        return self._model

    @property
    def dim(self) -> int:
        """The vector dimension; sends one probe request if it is not known yet.

        Raises:
            ServerUnavailableError, OperationTimeoutError, ServerResponseError,
            ReplyParseError, InvalidInputError: as :meth:`embed`, for the probe.
        """
        if self._dim is None:
            self.embed(_DIM_PROBE)
        assert self._dim is not None
        return self._dim

    def _redact(self, text: str) -> str:
        return text.replace(self._api_key, "***") if self._api_key else text

    def _post(self, texts: list[str]) -> bytes:
        import urllib.error
        import urllib.request

        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "User-Agent": f"agent-memory/{__version__}",
        }
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        payload = json.dumps({"model": self._model, "input": texts}).encode("utf-8")
        request = urllib.request.Request(
            self._endpoint, data=payload, headers=headers, method="POST"
        )
        where = f"embedding server {self._endpoint}"
        too_slow = f"{where} did not answer in full within {self._timeout} s"
        dim = self._dim
        limit = max_response_bytes(len(texts), dim)
        try:
            with opener().open(request, timeout=self._timeout) as response:
                announced = _announced_length(response)
                # an answer announced as larger is refused unread; any other is read up
                # to one byte past the limit (a chunked or mislabelled one may run on)
                oversized = announced is not None and announced > limit
                body: bytes = b"" if oversized else response.read(limit + 1)
        except urllib.error.HTTPError as exc:
            with exc:  # it holds the response and its socket until closed
                raise status_error(exc.code, self._redact(error_detail(exc))) from exc
        except urllib.error.URLError as exc:
            if isinstance(exc.reason, TimeoutError):
                raise OperationTimeoutError(too_slow) from exc
            reason = self._redact(str(exc.reason))
            raise ServerUnavailableError(f"cannot reach {where}: {reason}") from exc
        except TimeoutError as exc:
            raise OperationTimeoutError(too_slow) from exc
        except (http.client.HTTPException, OSError) as exc:
            raise ServerUnavailableError(
                f"connection to {where} failed: {type(exc).__name__}"
            ) from exc
        if oversized or len(body) > limit:  # a server gone wrong must not fill the memory
            width = (
                f"{dim}-dimensional vector(s)"
                if dim is not None
                else f"vector(s) of up to {max(UNKNOWN_WIDTH, MAX_DIM // len(texts))} numbers "
                "(dimension not known yet: give dim for wider ones)"
            )
            raise ServerResponseError(
                f"{where} answered over {limit} bytes for {len(texts)} text(s): more than "
                f"{len(texts)} {width} could need; not read further"
            )
        return body

    def _embed_batch(self, texts: list[str]) -> list[list[float]]:
        raw = parse_response(self._post(texts), len(texts))
        with self._lock:
            if self._dim is None:
                found = len(raw[0])
                if not 1 <= found <= MAX_DIM:
                    raise ServerResponseError(f"server returned {found}-dimensional vectors")
                self._dim = found
            dim = self._dim
        return finish_vectors(
            raw,
            rows=len(texts),
            dim=dim,
            source=f"model {self._model!r}",
            error=ServerResponseError,
        )

    def embed(self, text: str) -> list[float]:
        """Embed one text with one request.

        Raises:
            InvalidInputError: ``text`` is invalid, or the server rejected it (HTTP 400,
                413, 422).
            ServerUnavailableError: connection refused or dropped, HTTP 429, 502, 503.
            OperationTimeoutError: no complete answer within ``timeout``, HTTP 408, 504.
            ServerResponseError: any other HTTP error (401/403: bad key; 404: wrong URL
                or model), vectors of the wrong dimension, non-finite or zero, or an
                answer larger than its vectors could need (:func:`max_response_bytes`
                of the known ``dim``, or of :data:`UNKNOWN_WIDTH` before it is known;
                not read further).
            ReplyParseError: the response is not the expected JSON.
        """
        return self._embed_batch([check_text(text)])[0]

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed several texts, ``batch_size`` per request (no request for ``[]``).

        Raises:
            InvalidInputError, ServerUnavailableError, OperationTimeoutError,
            ServerResponseError, ReplyParseError: as :meth:`embed`.
        """
        checked = check_texts(texts)
        out: list[list[float]] = []
        for start in range(0, len(checked), self._batch_size):
            out.extend(self._embed_batch(checked[start : start + self._batch_size]))
        return out
