"""One embedded server per data folder: a second opener waits for a busy server rather
than start another on the same append-only file, adopts a server whose owner was
killed, and refuses a port the running server is not on."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from agent_memory.embedded import launcher, processes
from agent_memory.embedded import server as server_module
from agent_memory.embedded.binaries import find_search_module, find_server_binary
from agent_memory.embedded.launcher import free_port, server_pid, start_server
from agent_memory.embedded.server import EmbeddedServer, open_embedded
from agent_memory.errors import InvalidInputError, ServerUnavailableError

pytestmark = pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="reads /proc")


def _running(pid: int) -> bool:
    """Alive and not a zombie (the sandbox's init may reap an orphan's server late)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"


def _servers_of(folder: Path) -> list[int]:
    """The pids of the server processes whose working directory is ``folder``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
            name = (entry / "comm").read_text().strip()
        except OSError:
            continue
        if cwd == str(folder) and name.endswith("-server") and _running(int(entry.name)):
            found.append(int(entry.name))
    return sorted(found)


def _state(folder: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((folder / "server.json").read_text())
    return data


@pytest.fixture
def folder(tmp_path: Path) -> Iterator[Path]:
    """A data folder; any server still running on it afterwards is killed (one left by
    the code under test must not outlive the test)."""
    path = tmp_path.resolve() / "data"
    path.mkdir()
    yield path
    leftovers = _servers_of(path)
    for pid in leftovers:
        os.kill(pid, signal.SIGKILL)
    assert not leftovers, f"servers left running on {path}: {leftovers}"


def _in_thread(call: Callable[[], EmbeddedServer]) -> tuple[threading.Thread, list[object]]:
    results: list[object] = []

    def run() -> None:
        try:
            results.append(call())
        except Exception as exc:  # noqa: BLE001 - reported to the test, which fails
            results.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, results


def test_a_busy_server_is_waited_for_not_doubled(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = open_embedded(folder)
    assert first.process is not None
    pid = first.process.process.pid
    unanswered = threading.Event()
    real_probe = server_pid

    def probe(port: int, timeout: float = 0.5) -> int | None:
        answer = real_probe(port, timeout)
        if answer is None:
            unanswered.set()
        return answer

    monkeypatch.setattr(server_module, "server_pid", probe)
    os.kill(pid, signal.SIGSTOP)  # as busy as a long script, for as long as we like
    thread: threading.Thread | None = None
    results: list[object] = []
    try:
        thread, results = _in_thread(lambda: open_embedded(folder))
        assert unanswered.wait(60), "the opener never probed the stopped server"
        os.kill(pid, signal.SIGCONT)
        thread.join(60)
        assert len(results) == 1
        second = results[0]
        assert isinstance(second, EmbeddedServer), second
        assert second.url == first.url and not second.owned
        assert _state(folder)["pid"] == pid
        assert _servers_of(folder) == [pid]
    finally:
        os.kill(pid, signal.SIGCONT)
        if thread is not None:
            thread.join(60)
        for opened in results:
            if isinstance(opened, EmbeddedServer):
                opened.stop()
        first.stop()
    assert not (folder / "server.json").exists()


def test_a_server_that_stays_busy_fails_clearly_after_the_wait(folder: Path) -> None:
    first = open_embedded(folder)
    assert first.process is not None
    pid = first.process.process.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        with pytest.raises(ServerUnavailableError) as caught:
            open_embedded(folder, wait=1.0)
        assert str(folder) in str(caught.value) and f"pid {pid}" in str(caught.value)
        assert _state(folder)["pid"] == pid
        assert _servers_of(folder) == [pid]
    finally:
        os.kill(pid, signal.SIGCONT)
        first.stop()


def test_a_lock_held_past_the_wait_fails_clearly(folder: Path) -> None:
    with open(folder / "server.lock", "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)  # another process stuck starting a server, say
        thread, results = _in_thread(lambda: open_embedded(folder, wait=0.5))
        thread.join(60)
        fcntl.flock(handle, fcntl.LOCK_UN)
    thread.join(60)
    for opened in results:
        if isinstance(opened, EmbeddedServer):
            opened.stop()
    assert len(results) == 1 and isinstance(results[0], ServerUnavailableError), results
    assert str(folder / "server.lock") in str(results[0])
    assert not (folder / "server.json").exists()


@pytest.mark.parametrize("wait", [-1, float("nan"), float("inf"), "5", True])
def test_a_wait_that_is_not_seconds_is_refused(folder: Path, wait: object) -> None:
    with pytest.raises(InvalidInputError) as caught:
        open_embedded(folder, wait=wait)  # type: ignore[arg-type]
    assert caught.value.field == "wait"


@contextlib.contextmanager
def _owner(folder: Path) -> Iterator[tuple[subprocess.Popen[str], int, str]]:
    """A process that opened ``folder`` (so owns its server) and stays alive: it, the
    server's pid and URL. Killed on exit (SIGKILL: its server is left running)."""
    code = (
        "import sys, time\n"
        "from agent_memory.embedded.server import open_embedded\n"
        f"s = open_embedded({str(folder)!r})\n"
        "print(s.process.process.pid, s.url, flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout is not None
        pid, url = owner.stdout.readline().split()
        yield owner, int(pid), url
    finally:
        owner.kill()
        owner.wait()
        if owner.stdout is not None:
            owner.stdout.close()


def _orphan(folder: Path) -> tuple[int, str]:
    """A server of ``folder`` whose owner was SIGKILLed: its pid and URL."""
    with _owner(folder) as (_, pid, url):
        pass
    assert _running(pid)
    return pid, url


def test_a_server_whose_owner_was_killed_is_adopted(folder: Path) -> None:
    pid, url = _orphan(folder)
    client = redis.Redis.from_url(url)
    try:
        client.set("kept", "yes")
    finally:
        client.close()
    adopter = open_embedded(folder)
    try:
        assert adopter.url == url and adopter.owned
        assert _state(folder)["owner"] == os.getpid()
        again = open_embedded(folder)  # the owner (this process) is alive: not adopted twice
        assert again.url == url and not again.owned
    finally:
        adopter.stop()
    assert not _running(pid)
    assert not (folder / "server.json").exists()
    restarted = open_embedded(folder)  # the adopter's stop kept the data
    try:
        client = redis.Redis.from_url(restarted.url)
        assert client.get("kept") == b"yes"
        client.close()
    finally:
        restarted.stop()


def test_a_live_owner_in_another_process_keeps_its_server(folder: Path) -> None:
    with _owner(folder) as (owner, pid, url):
        opened = open_embedded(folder)
        assert opened.url == url and not opened.owned
        opened.stop()  # a no-op: not the owner
        assert _state(folder)["owner"] == owner.pid and _running(pid)
    opened = open_embedded(folder)  # its owner is gone now: adopted, and stopped below
    assert opened.owned
    opened.stop()
    assert not _running(pid)


def test_an_owner_pid_reused_by_another_process_does_not_block_adoption(folder: Path) -> None:
    pid, url = _orphan(folder)
    # The OS gave the dead owner's pid to an unrelated process: a sleeper stands in for
    # it (the record keeps what else the owner wrote of itself).
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        state = _state(folder)
        (folder / "server.json").write_text(json.dumps({**state, "owner": sleeper.pid}))
        adopter = open_embedded(folder)
        try:
            assert adopter.url == url and adopter.owned
            assert _state(folder)["owner"] == os.getpid()
        finally:
            adopter.stop()
        assert not _running(pid) and _running(sleeper.pid)
    finally:
        sleeper.kill()
        sleeper.wait()


def _as_older_release(folder: Path) -> None:
    """Rewrite the folder's record as an older release wrote it: no owner fields."""
    state = _state(folder)
    (folder / "server.json").write_text(
        json.dumps({k: v for k, v in state.items() if not k.startswith("owner")})
    )


def test_an_older_releases_record_whose_owner_died_is_adopted(folder: Path) -> None:
    pid, url = _orphan(folder)
    _as_older_release(folder)
    adopter = open_embedded(folder)
    try:
        assert adopter.url == url and adopter.owned
        assert _state(folder)["owner"] == os.getpid()
    finally:
        adopter.stop()
    assert not _running(pid)


def test_an_older_releases_record_whose_owner_lives_is_left_to_it(folder: Path) -> None:
    # An older release started the server as its child, and named no owner.
    with _owner(folder) as (_, pid, url):
        _as_older_release(folder)
        opened = open_embedded(folder)
        assert opened.url == url and not opened.owned
        opened.stop()  # a no-op: not the owner
        assert _running(pid) and "owner" not in _state(folder)
    adopter = open_embedded(folder)  # the owner was killed: its orphan is adopted now
    assert adopter.url == url and adopter.owned
    adopter.stop()
    assert not _running(pid)


def _refused(folder: Path) -> ServerUnavailableError:
    """The error opening ``folder`` raises (a server it started instead is stopped, and
    the test fails)."""
    try:
        opened = open_embedded(folder, wait=1.0)
    except ServerUnavailableError as exc:
        return exc
    opened.stop()
    pytest.fail(f"opened {opened} beside the running server of {folder}")


def test_a_running_server_whose_record_is_gone_is_not_doubled(folder: Path) -> None:
    first = open_embedded(folder)
    assert first.process is not None
    pid = first.process.process.pid
    client = redis.Redis.from_url(first.url)
    try:
        client.set("kept", "yes")
        (folder / "server.json").unlink()  # removed by hand, say
        refused = str(_refused(folder))
        assert str(folder) in refused and f"pid {pid}" in refused, refused
        assert _servers_of(folder) == [pid] and client.get("kept") == b"yes"
    finally:
        client.close()
        first.stop()
    again = open_embedded(folder)  # once that server stopped, the folder opens again
    try:
        client = redis.Redis.from_url(again.url)
        assert again.owned and client.get("kept") == b"yes"
        client.close()
    finally:
        again.stop()


def test_an_orphan_whose_record_is_gone_is_not_doubled(folder: Path) -> None:
    pid, _ = _orphan(folder)
    (folder / "server.json").unlink()
    try:
        refused = str(_refused(folder))
        assert str(folder) in refused and f"pid {pid}" in refused, refused
        assert _servers_of(folder) == [pid]
    finally:
        os.kill(pid, signal.SIGTERM)
    assert _wait_gone(pid)
    again = open_embedded(folder)  # the server that held the folder is gone
    assert again.owned
    again.stop()


def test_an_older_releases_server_whose_record_is_gone_is_not_doubled(folder: Path) -> None:
    # An older release started the server as this one does but held no server.running
    # lock: once its server.json is removed, only the process itself tells it runs.
    binary = find_server_binary()
    assert binary is not None
    older = start_server(binary, folder, appendonly=True, log_name="server.log")
    try:
        refused = str(_refused(folder))
        pid = older.process.pid
        assert str(folder) in refused and f"pid {pid}" in refused, refused
        assert _servers_of(folder) == [pid]
    finally:
        older.stop()
    again = open_embedded(folder)  # once it stopped, the folder opens again
    assert again.owned
    again.stop()


def test_a_crashed_server_leaves_the_folder_free_for_the_next(folder: Path) -> None:
    # The owner lives on; its server crashed: the folder is not taken by anything.
    first = open_embedded(folder)
    assert first.process is not None
    first.process.kill()
    try:
        again = open_embedded(folder)
        assert again.owned and again.url != first.url
        again.stop()
    finally:
        first.stop()


def test_an_open_interrupted_during_start_up_leaves_no_server(
    folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C while the server starts (loading a large file, say): the server is in a
    # session of its own, so the interrupt does not reach it; the opener must stop it.
    started_pids: list[int] = []

    def interrupted(probe: object) -> bool:
        started_pids.append(probe.pid)  # type: ignore[attr-defined]
        raise KeyboardInterrupt

    monkeypatch.setattr(launcher._OwnServerProbe, "__call__", interrupted)
    with pytest.raises(KeyboardInterrupt):
        open_embedded(folder)
    assert started_pids and _wait_gone(started_pids[0]), f"server {started_pids} left running"
    monkeypatch.undo()
    again = open_embedded(folder)  # nothing holds the folder
    assert again.owned
    again.stop()


def _wait_gone(pid: int) -> bool:
    """Whether ``pid`` exits within a minute (an orphan is reaped by init, not us)."""
    for _ in range(1200):
        if not _running(pid):
            return True
        time.sleep(0.05)
    return False


def test_two_openers_do_not_both_adopt_an_orphan(folder: Path) -> None:
    pid, url = _orphan(folder)
    barrier = threading.Barrier(2)

    def open_together() -> EmbeddedServer:
        barrier.wait(60)
        return open_embedded(folder)

    runs = [_in_thread(open_together) for _ in range(2)]
    for thread, _ in runs:
        thread.join(60)
    opened = [results[0] for _, results in runs if results]
    try:
        assert len(opened) == 2
        assert all(isinstance(s, EmbeddedServer) and s.url == url for s in opened), opened
        assert sorted(s.owned for s in opened if isinstance(s, EmbeddedServer)) == [False, True]
    finally:
        for s in opened:
            if isinstance(s, EmbeddedServer):
                s.stop()
    assert not _running(pid)


def test_concurrent_openers_start_one_server(folder: Path) -> None:
    barrier = threading.Barrier(3)

    def open_together() -> EmbeddedServer:
        barrier.wait(60)
        return open_embedded(folder)

    runs = [_in_thread(open_together) for _ in range(3)]
    for thread, _ in runs:
        thread.join(60)
    opened = [s for _, results in runs for s in results if isinstance(s, EmbeddedServer)]
    try:
        assert len(opened) == 3 and len({s.url for s in opened}) == 1
        assert sorted(s.owned for s in opened) == [False, False, True]
        assert len(_servers_of(folder)) == 1
    finally:
        for s in opened:
            s.stop()


def test_a_port_the_running_server_is_not_on_is_refused(folder: Path) -> None:
    first = open_embedded(folder)
    assert first.process is not None
    running = first.process.port
    try:
        other = free_port()
        while other == running:
            other = free_port()
        with pytest.raises(InvalidInputError, match=f"already served on port {running}") as caught:
            open_embedded(folder, port=other)
        assert caught.value.field == "port"
        same = open_embedded(folder, port=running)
        assert same.url == first.url and not same.owned
    finally:
        first.stop()


def test_a_data_folder_whose_name_has_spaces(folder: Path) -> None:
    spaced = folder / "my agent's data"
    server = open_embedded(spaced)
    try:
        assert server.has_search and _servers_of(spaced) != []
    finally:
        server.stop()


def test_a_module_with_arguments_under_a_folder_whose_name_has_spaces(folder: Path) -> None:
    module, binary = find_search_module(), find_server_binary()
    if module is None or binary is None:
        pytest.skip("needs a server and the search module (the embedded extra)")
    spaced = folder / "a module folder"
    spaced.mkdir()
    (spaced / module.name).symlink_to(module)
    process = start_server(
        binary, folder, module=spaced / module.name, module_args=("MAXSEARCHRESULTS", "123")
    )
    try:
        client = redis.Redis.from_url(process.url)
        setting = client.execute_command("FT.CONFIG", "GET", "MAXSEARCHRESULTS")
        client.close()
        pairs = setting.items() if isinstance(setting, dict) else setting  # by redis-py version
        assert dict(pairs) == {b"MAXSEARCHRESULTS": b"123"}
    finally:
        process.stop()


def test_a_stale_record_of_another_folders_server_starts_a_new_one(
    folder: Path, tmp_path: Path
) -> None:
    # server.json survived a crash, and its pid now belongs to a server of another
    # folder that does not answer on the recorded port: not this folder's server.
    other = open_embedded(tmp_path / "other")
    assert other.process is not None
    (folder / "server.json").write_text(
        json.dumps({"pid": other.process.process.pid, "port": free_port()})
    )
    try:
        server = open_embedded(folder, wait=5)  # waiting for the other would fail
        assert server.owned and server.url != other.url
        server.stop()
    finally:
        other.stop()


def test_ps_reads_a_process_start_whatever_the_time_zone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The fallback where there is no /proc (macOS): the owner and a later opener may run
    # in different time zones, and must read the same start for the same process.
    starts = set()
    for zone in ("UTC0", "JST-9", "EST5EDT"):
        monkeypatch.setenv("TZ", zone)
        starts.add(processes._ps_column(os.getpid(), "lstart", "ps"))
    assert len(starts) == 1 and None not in starts, starts
    assert processes._ps_column(os.getpid(), "ppid", "") == str(os.getppid())
    sleeper = subprocess.Popen(["sleep", "600"])
    try:
        assert processes.started(sleeper.pid) not in {None, processes.started(os.getpid())}
    finally:
        sleeper.kill()
        sleeper.wait()
    assert processes.started(sleeper.pid) is None  # gone (reaped)
