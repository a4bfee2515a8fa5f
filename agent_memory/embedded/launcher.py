"""Run one server process on a free loopback port and wait until it answers."""

from __future__ import annotations

import logging
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agent_memory.embedded.binaries import ServerBinary
from agent_memory.errors import ServerUnavailableError

logger = logging.getLogger(__name__)


def free_port() -> int:
    """Ask the kernel for a loopback port nobody is listening on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(slots=True)
class ServerProcess:
    """A running server started by :func:`start_server`."""

    binary: ServerBinary
    port: int
    process: subprocess.Popen[bytes]
    log_path: Path
    data_dir: Path
    module: Path | None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the server log (for error messages)."""
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as exc:
            return f"<log unreadable: {exc}>"
        return "\n".join(text.splitlines()[-lines:])

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL after ``timeout`` seconds)."""
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            logger.warning("server on port %d ignored SIGTERM; killing it", self.port)
            self.process.kill()
            self.process.wait(timeout=timeout)

    def kill(self) -> None:
        """Kill the server abruptly (SIGKILL), as a crash would."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


_PING_AND_INFO = b"*1\r\n$4\r\nPING\r\n*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n"


def parse_ready_reply(reply: bytes) -> int | None:
    """The ``process_id`` of a server's answer to ``PING`` then ``INFO server``, or
    ``None`` when the answer is incomplete or the server is not ready (an error reply
    such as ``-LOADING`` or ``-NOAUTH``)."""
    if not reply.startswith(b"+PONG\r\n"):
        return None
    header, _, body = reply[len(b"+PONG\r\n") :].partition(b"\r\n")
    if not header.startswith(b"$") or not header[1:].isdigit():
        return None
    size = int(header[1:])
    if len(body) < size:
        return None
    for line in body[:size].splitlines():
        key, _, value = line.partition(b":")
        if key == b"process_id" and value.strip().isdigit():
            return int(value)
    return None


def server_pid(port: int, timeout: float = 0.5) -> int | None:
    """The pid of the server answering on loopback ``port`` (``None``: no ready server
    answers there)."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(_PING_AND_INFO)
            reply = b""
            while (pid := parse_ready_reply(reply)) is None and len(reply) < 65536:
                chunk = sock.recv(65536)
                if not chunk:
                    return None
                reply += chunk
            return pid
    except OSError:
        return None


class _OwnServerProbe:
    """Ready when the server answering on ``port`` is the process we started, not
    another one that already listens there (ours then fails to bind and exits)."""

    def __init__(self, port: int, pid: int) -> None:
        self.port = port
        self.pid = pid
        self.foreign: int | None = None

    def __call__(self) -> bool:
        pid = server_pid(self.port)
        if pid is not None and pid != self.pid:
            self.foreign = pid
        return pid == self.pid


def _config_word(word: str) -> str:
    """``word`` quoted for a configuration file, whose lines split at spaces: a module
    under a folder whose name has a space must stay one word."""
    escaped = word.replace("\\", "\\\\").replace('"', '\\"')
    return '"' + escaped.replace("\n", "\\n").replace("\r", "\\r") + '"'


def start_server(
    binary: ServerBinary,
    data_dir: Path,
    *,
    port: int | None = None,
    module: Path | None = None,
    module_args: tuple[str, ...] = (),
    appendonly: bool = False,
    extra_args: tuple[str, ...] = (),
    startup_timeout: float = 20.0,
    log_name: str | None = None,
    pass_fds: tuple[int, ...] = (),
) -> ServerProcess:
    """Start ``binary`` on ``127.0.0.1`` and block until it answers PING (checked to be
    this process answering, by the ``process_id`` of ``INFO server``: a server already
    listening on ``port`` is never mistaken for it).

    ``module_args`` are passed to the module (``--use-coordinator``, say): the server's
    command line takes no module argument that starts with ``--``, so the module is then
    loaded from a one-line configuration file in ``data_dir``. ``pass_fds`` are left open
    in the server process (a lock it is to hold for its whole life, say). Interrupted
    while waiting (``KeyboardInterrupt``), it stops the server before re-raising.

    Raises:
        ServerUnavailableError: the process exited (``port`` taken, say) or did not
            answer in time; the message carries the end of its log.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    log_path = data_dir / (log_name or f"server-{port}.log")
    args = [str(binary.path)]
    if module is not None and module_args:
        config = data_dir / f"modules-{port}.conf"
        words = [str(module), *module_args]
        config.write_text(" ".join(["loadmodule", *map(_config_word, words)]) + "\n")
        args.append(str(config))
    args += [
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--dir",
        str(data_dir),
        "--logfile",
        str(log_path),
        "--save",
        "",
        "--appendonly",
        "yes" if appendonly else "no",
        "--protected-mode",
        "yes",
    ]
    if module is not None and not module_args:
        args += ["--loadmodule", str(module)]
    args += list(extra_args)
    process = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=binary.environment(),
        start_new_session=True,
        pass_fds=pass_fds,
    )
    server = ServerProcess(binary, port, process, log_path, data_dir, module)
    probe = _OwnServerProbe(port, process.pid)
    try:
        return wait_until_ready(server, probe, startup_timeout)
    except ServerUnavailableError as exc:
        if probe.foreign is None:
            raise
        raise ServerUnavailableError(
            f"port {port} is already served by another server (pid {probe.foreign}); the "
            f"one started there (pid {process.pid}) could not take it: {exc}"
        ) from exc
    except BaseException:
        # Interrupted while waiting (Ctrl-C, a cancelled task). In a session of its own
        # the server did not get the signal, and nobody has recorded it: stop it here.
        server.stop()
        raise


def wait_until_ready(
    server: ServerProcess, probe: Callable[[], bool], timeout: float
) -> ServerProcess:
    """Block until ``probe()`` answers True; kill the server if it never does.

    Raises:
        ServerUnavailableError: the process exited or did not answer in time; the
            message carries the end of its log.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise ServerUnavailableError(
                f"{server.binary.path} exited with code {server.process.returncode} during "
                f"start-up:\n{server.log_tail()}"
            )
        if probe():
            if server.process.poll() is None:
                return server
            continue  # exited meanwhile: reported above
        time.sleep(0.05)
    server.kill()
    raise ServerUnavailableError(
        f"{server.binary.path} did not answer on port {server.port} within {timeout}s:\n"
        f"{server.log_tail()}"
    )
