"""The embedded default: a private server persisted to a folder, shared by processes.

:func:`open_embedded` starts ``valkey-server`` (PATH first, then the Valkey 9.1 of the
``embedded`` extra; ``redis-server`` where there is no Valkey) on a free loopback port
with the search module when one is available, persisting to ``path`` with an
append-only file. A folder keeps the server family that first wrote it (recorded in
``server-family``), since Valkey cannot read the RDB format of Redis 8.

The folder records its running server in ``server.json`` (pid, port, owner pid), read
and written under a file lock (``server.lock``), so a second process opening the same
folder reuses that server instead of starting another. At most one server runs per
folder: while the recorded pid is alive and is that folder's server (on Linux, a
``*-server`` process whose working directory is the folder) no other is started, even
if it does not answer (a long script, loading its data); the opener waits for it up to
``wait`` seconds, then raises :class:`~agent_memory.errors.ServerUnavailableError`.

The record can be lost while its server runs (removed by hand, say), so the server itself
also marks the folder: it inherits ``server.running`` locked (``flock``) from the process
that starts it and holds it, with its forks, until it exits, whatever becomes of that
process or of the record. An opener that finds no running server recorded but that lock
held raises :class:`~agent_memory.errors.ServerUnavailableError` naming the folder and
the pid noted in the file, rather than start a second writer on the same append-only
file; stopping that pid frees the folder. The lock, unlike a scan for processes, works
alike with and without ``/proc``. A server of an older release holds no such lock: where
there is ``/proc`` it is found by its working directory (a ``*-server`` process in the
folder) and refused alike; elsewhere only its record guards it. Neither lock file may be
removed while a server runs.

The owner (the process that started the server) stops it on
:meth:`EmbeddedServer.stop` or at interpreter exit; other openers leave it running. An
owner killed without running its exit handlers (SIGKILL, a crash) leaves the server
running: the next process to open the folder adopts it (``owned`` is then True and its
``stop`` stops the server), so an orphan lives until the next open's close instead of
forever. The record names the owner by its pid and its start (``owner_started``: field 22
of ``/proc/<pid>/stat`` on Linux, ``ps -o lstart`` read in UTC elsewhere), so a process
the OS later gives the dead owner's pid does not pass for the owner. Where the start
cannot be read or compared, the owner counts as alive: its server is left running rather
than stopped under a process that may still use it.

A record written by an older release names no owner. Such a release started the server
as its own child, so its owner is alive for as long as it is the server's parent: the
server is adopted once it has been handed to init (its parent is pid 1) or to a session
manager that adopts orphans (``systemd``). Under any other adopter of orphans, or where
the parent cannot be read, it is left running. (A container whose init is itself the
older release's program is the one case this cannot tell from an orphan.)
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import fcntl
import json
import logging
import math
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from agent_memory.embedded.binaries import find_search_module, find_server_binary
from agent_memory.embedded.launcher import ServerProcess, server_pid, start_server
from agent_memory.embedded.processes import orphaned, pid_running, servers_of, serves, started
from agent_memory.errors import (
    AgentMemoryError,
    CapabilityError,
    InvalidInputError,
    ServerUnavailableError,
)

logger = logging.getLogger(__name__)

STATE_FILE = "server.json"
LOCK_FILE = "server.lock"
FAMILY_FILE = "server-family"
RUNNING_FILE = "server.running"
"""Locked by the folder's server for as long as it runs (see :func:`_hold_running`)."""
LOG_FILE = "server.log"
DEFAULT_WAIT = 30.0
"""Seconds :func:`open_embedded` waits for a folder's running server that does not
answer (or for another process holding the folder's lock) before it gives up."""

_POLL = 0.05
_STOP_TIMEOUT = 10.0


@dataclass(slots=True)
class EmbeddedServer:
    """A server serving an embedded data folder.

    Attributes:
        url: ``redis://127.0.0.1:<port>``.
        path: the data folder.
        owned: this process stops the server on :meth:`stop` (and at exit): it started
            it, or adopted it from an owner that died without stopping it.
        has_search: the search module is loaded.
        process: the server process, when this process started it.
        adopted_pid: the pid of the server, when this process adopted it.
    """

    url: str
    path: Path
    owned: bool
    has_search: bool
    process: ServerProcess | None = None
    adopted_pid: int | None = None

    async def stop_async(self) -> None:
        """:meth:`stop` in a worker thread: it waits for the process to exit (up to
        20 s) and for the folder's lock, which must not block an event loop."""
        await asyncio.to_thread(self.stop)

    def stop(self) -> None:
        """Stop the server if this process owns it (idempotent); a no-op otherwise."""
        process, self.process = self.process, None
        adopted, self.adopted_pid = self.adopted_pid, None
        pid = process.process.pid if process is not None else adopted
        if pid is None:
            return
        with contextlib.ExitStack() as stack:
            # Held until the server has exited: an opener must not see it half stopped
            # (no longer answering) and start a second server on the same data.
            try:
                stack.enter_context(_locked(self.path))
            except OSError as exc:  # the folder was removed: the server must stop anyway
                logger.warning("cannot lock %s (%s); stopping its server anyway", self.path, exc)
            if process is not None:
                process.stop()
            else:
                _terminate(pid, self.path)
            state = self.path / STATE_FILE
            # Only if it still describes this server: never forget a running one.
            with contextlib.suppress(OSError):
                if state.exists() and _read_state(state).get("pid") == pid:
                    state.unlink()


@contextlib.contextmanager
def _locked(path: Path, deadline: float | None = None) -> Iterator[None]:
    """The folder's lock; with ``deadline`` (``time.monotonic()``), waiting at most until
    then (:class:`ServerUnavailableError`)."""
    with open(path / LOCK_FILE, "a+") as handle:
        if deadline is None:
            fcntl.flock(handle, fcntl.LOCK_EX)
        else:
            while True:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise ServerUnavailableError(
                            f"another process kept {path / LOCK_FILE} locked (starting or "
                            f"stopping the server of {path}{_recorded(path)}) for longer "
                            "than the wait; retry later"
                        ) from None
                    time.sleep(_POLL)
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


def _write_state(folder: Path, state: dict[str, object]) -> None:
    # Replaced whole: a crash mid-write must not leave an unreadable record, which would
    # let the next opener start a second server beside the running one.
    partial = folder / f"{STATE_FILE}.tmp"
    partial.write_text(json.dumps(state))
    os.replace(partial, folder / STATE_FILE)


def _recorded(folder: Path) -> str:
    """`` (pid N, port P)`` of the recorded server, for messages (best effort, unlocked)."""
    state = folder / STATE_FILE
    if not state.exists():
        return ""
    data = _read_state(state)
    return f" (pid {data.get('pid')}, port {data.get('port')})"


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


def _terminate(pid: int, folder: Path, timeout: float = _STOP_TIMEOUT) -> None:
    """Stop an adopted server (SIGTERM, SIGKILL after ``timeout`` seconds). It is not
    this process's child, so it cannot be waited for: poll until it is gone, and signal
    it only while it is still the folder's server (its pid may have been reused)."""
    for signum in (signal.SIGTERM, signal.SIGKILL):
        if not serves(pid, folder):
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not pid_running(pid):
                return
            time.sleep(_POLL)
        if signum == signal.SIGTERM:
            logger.warning("server pid %d of %s ignored SIGTERM; killing it", pid, folder)


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
    path: str | os.PathLike[str] = "./agent-memory-data",
    *,
    port: int | None = None,
    wait: float = DEFAULT_WAIT,
) -> EmbeddedServer:
    """Reuse the server already serving ``path`` or start one (on ``port`` when given,
    else on a free loopback port).

    A folder has at most one server. When its recorded server is alive but does not
    answer (busy with a long script or command, loading its data), this waits up to
    ``wait`` seconds for it rather than start a second one on the same data. When the
    process that started it died without stopping it, the returned server is adopted:
    ``owned`` is True and :meth:`EmbeddedServer.stop` stops it.

    Raises:
        InvalidInputError: ``path`` is not a usable folder (an existing file, say, or
            one that cannot be created or written to); ``port`` differs from the port of
            the server already serving ``path`` (field ``port``); ``wait`` is not a
            number of seconds >= 0.
        CapabilityError: no server binary on PATH and the ``embedded`` extra is not
            installed.
        ServerUnavailableError: the server failed to start (with the end of its log),
            ``port`` being taken by another server, say; or the folder's running server
            (named with its pid) did not answer within ``wait`` seconds; or a server of
            the folder runs that ``server.json`` does not record (named with its pid).
    """
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not 0 <= wait < math.inf:
        raise InvalidInputError(
            f"wait must be a number of seconds >= 0, got {wait!r}", field="wait"
        )
    folder = data_folder(path)
    try:
        return _open(folder, port, wait)
    except AgentMemoryError:
        raise  # ServerUnavailableError is also an OSError (a ConnectionError)
    except OSError as exc:
        raise InvalidInputError(
            f"path {str(folder)!r} is not a folder the embedded server can use: {exc}",
            field="path",
        ) from exc


def _open(folder: Path, port: int | None, wait: float) -> EmbeddedServer:
    deadline = time.monotonic() + wait
    while True:
        with _locked(folder, deadline):
            state_path = folder / STATE_FILE
            state = _read_state(state_path) if state_path.exists() else {}
            pid, running = state.get("pid"), state.get("port")
            if not isinstance(pid, int) or not isinstance(running, int):
                return _start(folder, port)
            if pid_running(pid) and server_pid(running) == pid:
                return _reuse(folder, state, pid, running, port)
            if not serves(pid, folder):
                return _start(folder, port)
        # The folder's server is alive but not answering: busy (a long script or
        # command), loading its data or stopping. Another server would be a second
        # writer on the same append-only file, so wait for this one.
        if time.monotonic() >= deadline:
            raise ServerUnavailableError(
                f"the server of {folder} (pid {pid}, port {running}) did not answer within "
                f"{wait:g}s: it is busy (a long script or command), loading its data, or "
                f"hung. No second server is started on the same data: retry later, or "
                f"stop pid {pid}"
            )
        time.sleep(0.1)


def _reuse(
    folder: Path, state: dict[str, object], pid: int, running: int, port: int | None
) -> EmbeddedServer:
    if port is not None and port != running:
        raise InvalidInputError(
            f"{folder} is already served on port {running} (pid {pid}); it cannot also be "
            f"served on port {port}: omit port to use that server, or stop it first",
            field="port",
        )
    url, search = f"redis://127.0.0.1:{running}", bool(state.get("search"))
    # The owner's exit handlers stop the server; an owner killed without running them
    # (SIGKILL, a crash) leaves it to nobody, so this opener takes it over. Under the
    # lock, and the record then names this process: two openers cannot both adopt it.
    if _owner_alive(state, pid) or not serves(pid, folder):
        return EmbeddedServer(url, folder, False, search)
    _write_state(folder, {**state, **_owner_record()})
    logger.info(
        "adopting the server of %s (pid %d): its owner %s is gone", folder, pid, state.get("owner")
    )
    server = EmbeddedServer(url, folder, True, search, adopted_pid=pid)
    atexit.register(server.stop)
    return server


def _owner_record() -> dict[str, object]:
    """The record's fields that name this process as the owner: its pid, and its start
    (``owner_started``), which tells it apart from a later process given the same pid."""
    return {"owner": os.getpid(), "owner_started": started(os.getpid())}


def _owner_alive(state: dict[str, object], pid: int) -> bool:
    """Whether the owner of the folder's server (pid ``pid``) may still be alive.
    Adopting the server means stopping it on close, so when this cannot be told the
    answer is yes."""
    owner, recorded = state.get("owner"), state.get("owner_started")
    if not isinstance(owner, int):
        # A record of an older release, which names no owner; but it started the server
        # as its child, so its owner is alive until the server is handed to init.
        return not orphaned(pid)
    if not pid_running(owner):
        return False
    now = started(owner)
    if not isinstance(recorded, str) or now is None:
        return True  # no start to compare: this system (or the release) cannot tell
    if now.partition(":")[0] != recorded.partition(":")[0]:
        return True  # read by another means (/proc, ps): not comparable
    return now == recorded  # else the pid was given to another process


def _hold_running(folder: Path) -> int:
    """A descriptor of the folder's :data:`RUNNING_FILE`, locked, for the server about to
    start to inherit. flock() locks belong to the open file, so the lock is then held by
    the server (and any fork of it) until its last copy exits, whoever owns it.

    Raises:
        ServerUnavailableError: the lock is held: a server of the folder still runs
            although no running server is recorded (the record was removed, say).
    """
    fd = os.open(folder / RUNNING_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise ServerUnavailableError(_still_running(folder)) from None
    except BaseException:
        os.close(fd)
        raise
    return fd


def _note_running(held: int, pid: int, port: int) -> None:
    """Write the server's pid and port into the file it holds, for :func:`_still_running`
    to name it (rewritten in place: the lock belongs to this very file)."""
    os.ftruncate(held, 0)
    os.pwrite(held, json.dumps({"pid": pid, "port": port}).encode(), 0)


def _still_running(folder: Path) -> str:
    """Why no server is started on ``folder`` while its :data:`RUNNING_FILE` is held."""
    noted = _read_state(folder / RUNNING_FILE)
    pid, port = noted.get("pid"), noted.get("port")
    refusal = "a second server is not started on the same data"
    if isinstance(pid, int) and serves(pid, folder):
        return (
            f"{folder} is still served by pid {pid} (port {port}), which {folder / STATE_FILE} "
            f"does not record (removed by hand, say); {refusal}. Stop pid {pid} (SIGTERM: it "
            "saves its data), then open the folder again"
        )
    return (
        f"a process still holds {folder / RUNNING_FILE}, which the server of {folder} holds "
        f"while it runs (last noted: pid {pid}, port {port}; a fork of it finishing a write, "
        f"say), though {folder / STATE_FILE} records no running server; {refusal}. Retry "
        "later, or stop the process that holds the file"
    )


def _refuse_unrecorded(folder: Path) -> None:
    """Refuse to start a server beside one of ``folder`` that neither the record nor
    :data:`RUNNING_FILE` shows: a server of an older release, which holds no such lock,
    whose ``server.json`` was removed. Found by its working directory where there is
    ``/proc``; elsewhere such a server cannot be seen.

    Raises:
        ServerUnavailableError: naming the pid(s) of the folder's running server.
    """
    pids = servers_of(folder)
    if pids:
        named = ", ".join(map(str, pids))
        raise ServerUnavailableError(
            f"{folder} is still served by pid {named}, which {folder / STATE_FILE} does not "
            f"record (removed by hand, or written by an older release); a second server is "
            f"not started on the same data. Stop pid {named} (SIGTERM: it saves its data), "
            "then open the folder again"
        )


def _start(folder: Path, port: int | None) -> EmbeddedServer:
    binary = find_server_binary(prefer=_written_by(folder))
    if binary is None:
        raise CapabilityError(
            "no valkey-server or redis-server found: install one, or "
            "pip install 'agent-memory[embedded]'"
        )
    module = find_search_module()
    held = _hold_running(folder)
    try:
        _refuse_unrecorded(folder)
        process = start_server(
            binary, folder, port=port, module=module, appendonly=True, log_name=LOG_FILE,
            pass_fds=(held,),
        )  # fmt: skip
        try:
            _note_running(held, process.process.pid, process.port)
            (folder / FAMILY_FILE).write_text(binary.family + "\n")
            _write_state(
                folder,
                {"pid": process.process.pid, "port": process.port, "search": module is not None,
                 "binary": str(binary.path), **_owner_record()},
            )  # fmt: skip
        except BaseException:
            process.stop()
            raise
    finally:
        # The server keeps its own copy: the lock now lasts exactly as long as it does.
        os.close(held)
    server = EmbeddedServer(process.url, folder, True, module is not None, process)
    atexit.register(server.stop)
    return server
