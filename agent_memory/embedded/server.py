"""The embedded default: a private server persisted to a folder, shared by processes.

:func:`open_embedded` starts ``valkey-server`` (PATH first, then the Valkey 9.1 of the
``embedded`` extra; ``redis-server`` where there is no Valkey) on a free loopback port
with the search module when one is available, persisting to ``path`` with an
append-only file. A folder keeps the server family that first wrote it (recorded in
``server-family``), since Valkey cannot read the RDB format of Redis 8. The folder
records the running server (``server.json``) under a file lock, so a second process
opening the same folder reuses it instead of starting another. The process that
started the server stops it on :meth:`EmbeddedServer.stop` or at interpreter exit.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agent_memory.embedded.binaries import find_search_module, find_server_binary
from agent_memory.embedded.launcher import ServerProcess, server_pid, start_server
from agent_memory.errors import AgentMemoryError, CapabilityError, InvalidInputError

logger = logging.getLogger(__name__)

STATE_FILE = "server.json"
LOCK_FILE = "server.lock"
FAMILY_FILE = "server-family"
LOG_FILE = "server.log"


@dataclass(slots=True)
class EmbeddedServer:
    """A server serving an embedded data folder.

    Attributes:
        url: ``redis://127.0.0.1:<port>``.
        path: the data folder.
        owned: this process started the server (and stops it).
        has_search: the search module is loaded.
    """

    url: str
    path: Path
    owned: bool
    has_search: bool
    process: ServerProcess | None = None

    async def stop_async(self) -> None:
        """:meth:`stop` in a worker thread: it waits for the process to exit (up to
        20 s) and for the folder's lock, which must not block an event loop."""
        await asyncio.to_thread(self.stop)

    def stop(self) -> None:
        """Stop the server if this process started it (idempotent)."""
        if self.process is None:
            return
        process, self.process = self.process, None
        process.stop()
        with _locked(self.path):
            state = self.path / STATE_FILE
            if state.exists() and _read_state(state).get("pid") == process.process.pid:
                state.unlink()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path / LOCK_FILE, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _read_state(state: Path) -> dict[str, object]:
    try:
        data = json.loads(state.read_text())
    except (OSError, ValueError) as exc:
        logger.warning("ignoring unreadable %s: %s", state, exc)
        return {}
    return data if isinstance(data, dict) else {}


def _written_by(folder: Path) -> str | None:
    """The server family (``valkey`` or ``redis``) that wrote the folder's data, if known:
    from the marker this module leaves, else from the server log of an older release
    (which started Redis by default). Redis 8 writes an RDB version Valkey cannot load."""
    marker = folder / FAMILY_FILE
    if marker.is_file():
        family = marker.read_text().strip()
        return family if family in {"valkey", "redis"} else None
    log = folder / LOG_FILE
    if not log.is_file() or not (folder / "appendonlydir").is_dir():
        return None
    try:
        text = log.read_text(errors="replace")
    except OSError as exc:
        logger.warning("cannot read %s to tell which server wrote the data: %s", log, exc)
        return None
    last = max(("valkey", text.rfind("Valkey version=")), ("redis", text.rfind("Redis version=")),
               key=lambda found: found[1])  # fmt: skip
    return last[0] if last[1] >= 0 else None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def data_folder(path: object) -> Path:
    """``path`` as the absolute path of an existing folder (created when missing).

    Raises:
        InvalidInputError: ``path`` is not a path, is empty, or names something that is
            not a folder or cannot be created (the OS error is the ``__cause__``).
    """
    if not isinstance(path, (str, os.PathLike)):
        raise InvalidInputError(
            f"path must be a folder path (str or os.PathLike), got {type(path).__name__}",
            field="path",
        )
    raw = os.fspath(path)
    if not isinstance(raw, str) or not raw:
        raise InvalidInputError(f"path must be a non-empty folder path, got {raw!r}", field="path")
    try:
        folder = Path(raw).resolve()
        folder.mkdir(parents=True, exist_ok=True)
    except (OSError, ValueError) as exc:
        raise InvalidInputError(
            f"path {raw!r} is not a folder the embedded server can use: {exc}", field="path"
        ) from exc
    return folder


def open_embedded(
    path: str | os.PathLike[str] = "./agent-memory-data", *, port: int | None = None
) -> EmbeddedServer:
    """Reuse the server already serving ``path`` or start one (on ``port`` when given,
    else on a free loopback port).

    Raises:
        InvalidInputError: ``path`` is not a usable folder (an existing file, say, or
            one that cannot be created or written to).
        CapabilityError: no server binary on PATH and the ``embedded`` extra is not
            installed.
        ServerUnavailableError: the server failed to start (with the end of its log),
            ``port`` being taken by another server, say.
    """
    folder = data_folder(path)
    try:
        return _open(folder, port)
    except AgentMemoryError:
        raise  # ServerUnavailableError is also an OSError (a ConnectionError)
    except OSError as exc:
        raise InvalidInputError(
            f"path {str(folder)!r} is not a folder the embedded server can use: {exc}",
            field="path",
        ) from exc


def _open(folder: Path, port: int | None) -> EmbeddedServer:
    with _locked(folder):
        state_path = folder / STATE_FILE
        if state_path.exists():
            state = _read_state(state_path)
            running, pid = state.get("port"), state.get("pid")
            if (
                isinstance(running, int)
                and isinstance(pid, int)
                and _pid_alive(pid)
                and server_pid(running) == pid
            ):
                return EmbeddedServer(
                    f"redis://127.0.0.1:{running}", folder, False, bool(state.get("search"))
                )
        binary = find_server_binary(prefer=_written_by(folder))
        if binary is None:
            raise CapabilityError(
                "no valkey-server or redis-server found: install one, or "
                "pip install 'agent-memory[embedded]'"
            )
        module = find_search_module()
        process = start_server(
            binary, folder, port=port, module=module, appendonly=True, log_name=LOG_FILE
        )
        try:
            (folder / FAMILY_FILE).write_text(binary.family + "\n")
            state_path.write_text(
                json.dumps(
                    {"pid": process.process.pid, "port": process.port,
                     "search": module is not None, "binary": str(binary.path)}
                )
            )  # fmt: skip
        except BaseException:
            process.stop()
            raise
    server = EmbeddedServer(process.url, folder, True, module is not None, process)
    atexit.register(server.stop)
    return server
