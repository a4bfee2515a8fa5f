"""OpenAICompatibleEmbedder against a local /v1/embeddings server started by the test."""

from __future__ import annotations

import base64
import contextlib
import json
import math
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal

import numpy as np
import pytest

from agent_memory.embedders import OpenAICompatibleEmbedder
from agent_memory.embedders._deadline import Deadline
from agent_memory.embedders._http import parse_response
from agent_memory.embedders.base import is_unit
from agent_memory.errors import (
    InvalidInputError,
    OperationTimeoutError,
    ReplyParseError,
    ServerResponseError,
    ServerUnavailableError,
)

KEY = "sk-test-SECRET-0123456789"
DIM = 8
DRIP_SECONDS = 0.1  # between two bytes of a dripped answer
DRIPPED_BODY = b'{"data": [{"embedding": [1]}]}'  # 30 bytes: about 3 s when dripped


@dataclass
class Behaviour:
    status: int = 200
    error_body: str = ""
    delay: float = 0.0
    body: bytes | None = None  # raw body instead of embeddings
    dim: int = DIM
    reverse: bool = False  # answer items in reverse order (with their index)
    b64: bool = False
    value: float | None = None  # fill every component with this value
    headers: dict[str, str] = field(default_factory=dict)
    drip: Literal["", "head", "body"] = ""  # send this part one byte per DRIP_SECONDS
    length: int | None = None  # the Content-Length announced, if not the body's


class FakeServer:
    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.behaviour = Behaviour()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                server.requests.append({"method": "GET", "path": self.path})
                self.send_response(200)
                self.end_headers()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                payload = json.loads(self.rfile.read(length))
                server.requests.append(
                    {
                        "method": "POST",
                        "path": self.path,
                        "headers": dict(self.headers),
                        "json": payload,
                    }
                )
                b = server.behaviour
                if b.delay:
                    time.sleep(b.delay)
                if b.drip:
                    self.answer_dripping(b.drip)
                    return
                if b.status != 200:
                    self.send_response(b.status)
                    for name, value in b.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(b.error_body.encode())
                    return
                body = b.body if b.body is not None else self.embeddings(payload["input"], b)
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(b.length or len(body)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(body)  # the client may have given up (timeout test)
                if b.length is not None:
                    self.close_connection = True

            def answer_dripping(self, part: str) -> None:
                head = (
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(DRIPPED_BODY)}\r\n\r\n"
                ).encode()
                # Nagle would hold single bytes back while the client delays its ACKs.
                self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                at_once, dripped = (
                    (b"", head + DRIPPED_BODY) if part == "head" else (head, DRIPPED_BODY)
                )
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(at_once)
                    for i in range(len(dripped)):
                        self.wfile.write(dripped[i : i + 1])
                        time.sleep(DRIP_SECONDS)
                self.close_connection = True

            def embeddings(self, inputs: list[str], b: Behaviour) -> bytes:
                items = []
                for i, text in enumerate(inputs):
                    rng = np.random.default_rng(abs(hash(text)) % 2**32)
                    vec = rng.normal(size=b.dim) * 5.0  # not normalised on purpose
                    if b.value is not None:
                        vec = np.full(b.dim, b.value)
                    emb: Any = (
                        base64.b64encode(vec.astype("<f4").tobytes()).decode()
                        if b.b64
                        else vec.tolist()
                    )
                    items.append({"object": "embedding", "index": i, "embedding": emb})
                if b.reverse:
                    items.reverse()
                return json.dumps({"object": "list", "data": items, "model": "m"}).encode()

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture(scope="module")
def module_server() -> Iterator[FakeServer]:
    srv = FakeServer()
    yield srv
    srv.close()


@pytest.fixture
def server(module_server: FakeServer) -> FakeServer:
    module_server.requests.clear()
    module_server.behaviour = Behaviour()
    return module_server


def make(server: FakeServer, **kwargs: Any) -> OpenAICompatibleEmbedder:
    kwargs.setdefault("api_key", KEY)
    return OpenAICompatibleEmbedder(server.url, "text-embedding-test", **kwargs)


def test_request_shape_and_normalised_vectors(server: FakeServer) -> None:
    vec = make(server).embed("hello world")
    assert len(vec) == DIM and is_unit(vec)
    (req,) = server.requests
    assert req["method"] == "POST" and req["path"] == "/v1/embeddings"
    assert req["json"] == {"model": "text-embedding-test", "input": ["hello world"]}
    assert req["headers"]["Authorization"] == f"Bearer {KEY}"
    assert req["headers"]["Content-Type"] == "application/json"


def test_no_authorization_header_without_key(server: FakeServer) -> None:
    make(server, api_key=None).embed("x")
    assert "Authorization" not in server.requests[0]["headers"]


def test_batching_and_order(server: FakeServer) -> None:
    emb = make(server, batch_size=2)
    texts = [f"text {i}" for i in range(5)]
    vectors = emb.embed_many(texts)
    assert [r["json"]["input"] for r in server.requests] == [texts[0:2], texts[2:4], texts[4:]]
    assert vectors == [emb.embed(t) for t in texts]
    assert all(is_unit(v) for v in vectors)
    server.requests.clear()
    assert emb.embed_many([]) == []
    assert server.requests == []


def test_items_out_of_order_are_reordered(server: FakeServer) -> None:
    emb = make(server)
    expected = emb.embed_many(["a", "b", "c"])
    server.behaviour.reverse = True
    assert emb.embed_many(["a", "b", "c"]) == expected


def test_base64_embeddings(server: FakeServer) -> None:
    emb = make(server)
    expected = emb.embed("abc")
    server.behaviour.b64 = True
    assert emb.embed("abc") == pytest.approx(expected, abs=1e-6)


def test_dim_discovered_on_first_call(server: FakeServer) -> None:
    emb = make(server)
    assert "dim=None" in repr(emb)
    assert emb.dim == DIM  # sends one probe
    assert len(server.requests) == 1
    assert emb.dim == DIM
    assert len(server.requests) == 1
    other = make(server)
    other.embed("x")
    assert other.dim == DIM and len(server.requests) == 2


def test_wrong_dimension_non_finite_and_zero(server: FakeServer) -> None:
    with pytest.raises(ServerResponseError, match="shape"):
        make(server, dim=DIM + 1).embed("x")
    server.behaviour.value = float("nan")
    with pytest.raises(ServerResponseError, match="non-finite"):
        make(server).embed("x")
    server.behaviour.value = 0.0
    with pytest.raises(ServerResponseError, match="zero"):
        make(server).embed("x")


@pytest.mark.parametrize("value", [1e308, -1e308, 1e-320])
def test_finite_vectors_of_extreme_magnitude_are_normalised(
    server: FakeServer, value: float
) -> None:
    """A vector whose squared norm overflows or underflows a float is still a direction:
    it comes back unit length, not as zeros or as "a zero vector"."""
    server.behaviour.value = value
    vec = make(server).embed("x")
    assert is_unit(vec)
    assert vec == pytest.approx([math.copysign(DIM**-0.5, value)] * DIM)


@pytest.mark.parametrize(
    ("status", "exc"),
    [
        (400, InvalidInputError),
        (401, ServerResponseError),
        (403, ServerResponseError),
        (404, ServerResponseError),
        (413, InvalidInputError),
        (429, ServerUnavailableError),
        (500, ServerResponseError),
        (502, ServerUnavailableError),
        (503, ServerUnavailableError),
        (504, OperationTimeoutError),
    ],
)
def test_error_statuses(server: FakeServer, status: int, exc: type[Exception]) -> None:
    server.behaviour.status = status
    server.behaviour.error_body = json.dumps(
        {"error": {"message": f"Incorrect API key provided: {KEY}", "type": "x"}}
    )
    emb = make(server)
    with pytest.raises(exc) as info:
        emb.embed("x")
    assert str(status) in str(info.value)
    assert KEY not in str(info.value) and KEY not in repr(info.value)
    assert "Incorrect API key provided: ***" in str(info.value)


def test_an_error_body_nested_too_deep_still_gives_the_status(server: FakeServer) -> None:
    server.behaviour.status = 500
    server.behaviour.error_body = "[" * 4_000
    with pytest.raises(ServerResponseError, match="HTTP 500"):
        make(server).embed("x")


def test_redirect_is_not_followed(server: FakeServer) -> None:
    server.behaviour.status = 307
    server.behaviour.headers = {"Location": server.url + "/elsewhere"}
    with pytest.raises(ServerResponseError, match="307"):
        make(server).embed("x")
    assert len(server.requests) == 1


def test_timeout(server: FakeServer) -> None:
    server.behaviour.delay = 1.0
    with pytest.raises(OperationTimeoutError) as info:
        make(server, timeout=0.2).embed("x")
    assert server.url in str(info.value) and "0.2 s" in str(info.value)


@pytest.mark.parametrize("part", ["body", "head"])
def test_timeout_bounds_the_whole_answer(server: FakeServer, part: Literal["head", "body"]) -> None:
    # Every byte comes well within the timeout; the whole answer (about 3 s) does not.
    server.behaviour.drip = part
    with pytest.raises(OperationTimeoutError) as info:
        make(server, timeout=1).embed("x")
    assert server.url in str(info.value) and "1.0 s" in str(info.value)


@pytest.mark.parametrize("timeout", [1, None])
def test_a_prompt_answer(server: FakeServer, timeout: float | None) -> None:
    server.behaviour.body = DRIPPED_BODY
    assert make(server, timeout=timeout).embed("x") == [1.0]


def test_deadline_counts_down_then_fails() -> None:
    now = [100.0]
    deadline = Deadline(2.0, clock=lambda: now[0])
    assert deadline.remaining() == 2.0
    now[0] = 101.5
    assert deadline.remaining() == 0.5
    now[0] = 102.0  # no time left must fail: a socket timeout of 0 means non-blocking
    with pytest.raises(TimeoutError):
        deadline.remaining()


def test_connection_refused() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    emb = OpenAICompatibleEmbedder(f"http://127.0.0.1:{port}/v1", "m", api_key=KEY)
    with pytest.raises(ServerUnavailableError) as info:
        emb.embed("x")
    assert KEY not in str(info.value)


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[]",
        b'{"data": 3}',
        b'{"data": []}',
        b'{"data": [{"embedding": "!!"}]}',
        b'{"data": [{"index": 5, "embedding": [1.0]}]}',
        b'{"data": [{"embedding": ["a"]}]}',
        b'{"data": [{"embedding": [1%s]}]}' % (b"0" * 400),  # beyond any float
        b"[" * 100_000,  # nested deeper than the JSON decoder recurses
        b'{"data": [{"embedding": %s}]}' % (b"[" * 5_000),
    ],
)
def test_malformed_responses(server: FakeServer, body: bytes) -> None:
    server.behaviour.body = body
    with pytest.raises(ReplyParseError):
        make(server).embed("x")


def test_an_answer_larger_than_any_vectors_is_not_read(server: FakeServer) -> None:
    """A server gone wrong (an endless or huge answer) must not fill the process's
    memory: past what the widest vectors could take, the answer is refused unread."""
    from agent_memory.embedders.openai_compat import max_response_bytes

    server.behaviour.body = b" " * (max_response_bytes(1) + 10)
    with pytest.raises(ServerResponseError, match="answered over"):
        make(server).embed("x")
    server.behaviour.body = None
    assert len(make(server).embed("x")) == DIM  # an answer within the bound is read


def test_the_answer_is_bounded_by_the_known_dimension(server: FakeServer) -> None:
    """Once ``dim`` is known (given, or learned from the first answer), an answer is read
    only up to what that many vectors of that width take in JSON: the bound used to be
    the widest vectors' (65,536 numbers each: 129 MiB for a batch of 64, 4 GiB for one
    of 2,048), however narrow the model. Before it is known, vectors of up to 4,096
    numbers are allowed for (one text: the widest)."""
    from agent_memory.embedders import openai_compat

    given, learned = make(server, dim=DIM), make(server)
    learned.embed("first")  # learns the dimension
    server.behaviour.body = b" " * (2 << 20)  # 2 MiB: far more than 64 vectors of 8 numbers
    for embedder in (given, learned):
        for texts in (["x"], [f"t{i}" for i in range(64)]):
            with pytest.raises(ServerResponseError, match=f"answered over .* {DIM}-dimensional"):
                embedder.embed_many(texts)
    limit: Any = openai_compat.max_response_bytes
    assert limit(64, 1536) < 8 << 20  # text-embedding-3-small, a batch of 64
    assert limit(2048, 3072) < 400 << 20  # -3-large, OpenAI's largest batch
    assert limit(1) > 65_536 * 32  # the widest vector, before dim is known
    assert limit(64) < 32 << 20
    many = [f"t{i}" for i in range(32)]  # before dim is known: up to 4,096 numbers each
    server.behaviour.body = b" " * (limit(32) + 1)
    with pytest.raises(ServerResponseError, match=f"over {limit(32)} bytes .* up to 4096"):
        make(server).embed_many(many)
    server.behaviour.body = b"{}" + b" " * limit(32, DIM)  # within the bound: read, parsed
    with pytest.raises(ReplyParseError):
        make(server).embed_many(many)
    server.behaviour.body = None
    assert len(given.embed_many(many)) == len(learned.embed_many(many)) == 32


def test_an_answer_announced_larger_than_the_bound_is_not_read(server: FakeServer) -> None:
    """A ``Content-Length`` over the bound is refused from the header, the body unread."""
    server.behaviour.body = b'{"data": []}'
    server.behaviour.length = 2 << 20  # far more than one vector of 8 numbers
    with pytest.raises(ServerResponseError, match="answered over"):
        make(server, dim=DIM).embed("x")


@pytest.mark.parametrize(
    "indices", [('"0"', "1"), ("null", "null"), ("1", "true"), ("0", "1.0"), ('"a"', "0")]
)
def test_indices_that_are_not_integers(indices: tuple[str, str]) -> None:
    items = ", ".join(f'{{"index": {i}, "embedding": [1]}}' for i in indices)
    body = '{"data": [' + items + "]}"
    with pytest.raises(ReplyParseError):
        parse_response(body.encode(), 2)


def test_parse_response_without_index() -> None:
    assert parse_response(b'{"data": [{"embedding": [1, 2]}, {"embedding": [3, 4]}]}', 2) == [
        [1.0, 2.0],
        [3.0, 4.0],
    ]


def test_repr_hides_key_and_id(server: FakeServer) -> None:
    emb = make(server)
    assert KEY not in repr(emb) and "***" in repr(emb)
    assert emb.id == f"openai-compat:text-embedding-test@{server.url}"
    assert make(server, embedder_id="mine").id == "mine"
    assert (
        OpenAICompatibleEmbedder(server.url + "/", "m").id
        == OpenAICompatibleEmbedder(server.url, "m").id
    )
    with pytest.raises(AttributeError):
        emb.__dict__  # noqa: B018 - slotted


def test_full_endpoint_url_is_accepted(server: FakeServer) -> None:
    OpenAICompatibleEmbedder(server.url + "/embeddings", "m").embed("x")
    assert server.requests[0]["path"] == "/v1/embeddings"


async def test_async_and_call(server: FakeServer) -> None:
    emb = make(server)
    assert await emb.aembed("x") == emb.embed("x") == emb("x")
    assert await emb.aembed_many(["a", "b"]) == emb.embed_many(["a", "b"])


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (("ftp://h/v1", "m"), {}),
        (("not a url", "m"), {}),
        (("http://user:pw@h/v1", "m"), {}),
        (("http://h/v1?key=1", "m"), {}),
        (("http://[::1", "m"), {}),
        (("http://h:notaport/v1", "m"), {}),
        (("http://h:99999/v1", "m"), {}),
        (("http://h/v1", ""), {}),
        (("http://h/v1", "m"), {"api_key": "a\r\nX-Injected: 1"}),
        (("http://h/v1", "m"), {"api_key": ""}),
        (("http://h/v1", "m"), {"timeout": 0}),
        (("http://h/v1", "m"), {"timeout": float("inf")}),
        (("http://h/v1", "m"), {"batch_size": 0}),
        (("http://h/v1", "m"), {"dim": 0}),
        ((None, "m"), {}),
    ],
)
def test_invalid_arguments(args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError) as info:
        OpenAICompatibleEmbedder(*args, **kwargs)
    assert "pw" not in str(info.value)


def test_invalid_texts(server: FakeServer) -> None:
    emb = make(server)
    with pytest.raises(InvalidInputError):
        emb.embed(b"bytes")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        emb.embed_many("one string")
    assert server.requests == []
