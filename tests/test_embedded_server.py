"""The embedded server: it never mistakes another server for the one it started, and
refuses a data folder it cannot use with an error naming ``path``."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import redis

from agent_memory.embedded.launcher import parse_ready_reply, server_pid
from agent_memory.embedded.server import open_embedded
from agent_memory.errors import InvalidInputError, ServerUnavailableError
from tests.conftest import ServerInfo, _Servers

_INFO = b"# Server\r\nredis_version:7.2.4\r\nprocess_id:4242\r\ntcp_port:6379\r\n"


def _bulk(body: bytes) -> bytes:
    return b"$%d\r\n%s\r\n" % (len(body), body)


@pytest.mark.parametrize(
    ("reply", "pid"),
    [
        (b"+PONG\r\n" + _bulk(_INFO), 4242),
        (b"+PONG\r\n" + _bulk(_INFO)[:-10], None),  # incomplete: read more
        (b"+PONG\r\n", None),
        (b"", None),
        (b"-LOADING server is loading\r\n" + _bulk(_INFO), None),  # not ready yet
        (b"-NOAUTH Authentication required.\r\n-NOAUTH Authentication required.\r\n", None),
        (b"+PONG\r\n" + _bulk(b"# Server\r\nredis_version:7.2.4\r\n"), None),  # no pid
        (b"+PONG\r\n" + _bulk(b"process_id:x1\r\n"), None),
    ],
)
def test_parse_ready_reply(reply: bytes, pid: int | None) -> None:
    assert parse_ready_reply(reply) == pid


def test_server_pid_of_a_real_server(tmp_path: Path) -> None:
    server = open_embedded(tmp_path)
    try:
        assert server.process is not None
        assert server_pid(server.process.port) == server.process.process.pid
    finally:
        server.stop()


def test_a_port_taken_by_another_server_is_refused(servers: _Servers, tmp_path: Path) -> None:
    foreign: ServerInfo = servers.get("valkey")
    port = int(foreign.url.rsplit(":", 1)[1])
    raw = redis.Redis.from_url(foreign.url)
    try:
        with pytest.raises(ServerUnavailableError, match=f"port {port} is already served"):
            open_embedded(tmp_path / "data", port=port)
        assert not (tmp_path / "data" / "server.json").exists()
        assert raw.ping()  # the other server is untouched
    finally:
        raw.close()


def test_a_recorded_server_is_reused_only_if_it_still_answers_as_itself(
    servers: _Servers, tmp_path: Path
) -> None:
    # server.json left by a crash: its port is now served by another process, and its
    # pid (ours here) is alive: the folder gets a server of its own.
    foreign = servers.get("valkey")
    port = int(foreign.url.rsplit(":", 1)[1])
    (tmp_path / "server.json").write_text(json.dumps({"pid": os.getpid(), "port": port}))
    server = open_embedded(tmp_path)
    try:
        assert server.owned and server.url != foreign.url
    finally:
        server.stop()


@pytest.mark.parametrize("path", [123, b"/tmp/x", "", None])
def test_a_path_that_is_not_a_path_is_refused(path: object) -> None:
    with pytest.raises(InvalidInputError) as caught:
        open_embedded(path)  # type: ignore[arg-type]
    assert caught.value.field == "path"


def test_a_file_or_an_uncreatable_folder_is_refused(tmp_path: Path) -> None:
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    for path in (a_file, a_file / "below", "/proc/agent-memory-nope"):
        with pytest.raises(InvalidInputError, match="not a folder") as caught:
            open_embedded(path)
        assert caught.value.field == "path"
        assert isinstance(caught.value.__cause__, OSError)
