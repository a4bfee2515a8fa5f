"""What this machine says about a process: alive, a server of a data folder.

On Linux from ``/proc``; elsewhere (macOS, no ``/proc``) from ``kill(pid, 0)`` and
``ps``. Each answer that cannot be had says so (``None``, ``[]``) and the caller picks
the safe side: the embedded server never starts a second server on one folder and never
stops one that a live process may still use.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def pid_running(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie is not: it exited and waits to be
    reaped, which for a server whose owner died is up to init)."""
    if pid <= 0:  # kill(0 or -n) would signal a process group
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return not Path("/proc/self").is_dir()  # without /proc, kill() is all we know
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def serves(pid: int, folder: Path) -> bool:
    """Whether process ``pid`` is alive and is a server of ``folder``: a pid reused by
    another process (after a crash or reboot) is not mistaken for it."""
    if not pid_running(pid):
        return False
    proc = Path(f"/proc/{pid}")
    try:
        cwd = os.readlink(proc / "cwd")
        programs = [os.readlink(proc / "exe")]
        programs += os.fsdecode((proc / "cmdline").read_bytes()).split("\0")[:1]
    except FileNotFoundError:
        if Path("/proc/self").is_dir():
            return False  # exited meanwhile
        programs = ps_program(pid)  # no /proc (macOS)
    except OSError:  # not readable (another user's process): ask ps
        programs = ps_program(pid)
    else:
        # Valkey and Redis chdir to their --dir: the working directory ties the
        # process to the folder.
        if Path(cwd) != folder:
            return False
    if not programs:
        # Cannot tell: assume it is, since wrongly starting a second server on the same
        # append-only file risks the data, while wrongly waiting ends in a clear error.
        return True
    # (Debian's redis-server is a link to redis-check-rdb: the command line tells.)
    return any("-server" in Path(program).name for program in programs)


def servers_of(folder: Path) -> list[int]:
    """The pids of the live server processes of ``folder`` (see :func:`serves`), found
    by their working directory in ``/proc``; ``[]`` without ``/proc`` (macOS), where no
    scan can tell, and for another user's processes, whose directory cannot be read."""
    proc = Path("/proc")
    if not (proc / "self").is_dir():
        return []
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:  # exited meanwhile, or not ours to read
            continue
        if Path(cwd) == folder and serves(int(entry.name), folder):
            found.append(int(entry.name))
    return sorted(found)


def started(pid: int) -> str | None:
    """When process ``pid`` started, as a token another process later given the same
    pid does not share (``None``: no such process, or this system cannot tell).

    Linux: ``proc:<ticks>``, field 22 of ``/proc/<pid>/stat`` (clock ticks from boot, so
    a changed clock does not change it). Elsewhere: ``ps:<lstart>`` read in UTC, since
    the caller's time zone may differ from the one that recorded it. Tokens of the two
    kinds do not compare.
    """
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return None if Path("/proc/self").is_dir() else _ps_column(pid, "lstart", "ps")
    except OSError:
        return _ps_column(pid, "lstart", "ps")
    # Split after the command, which may hold spaces and parentheses: field 3 is first.
    fields = stat.rpartition(")")[2].split()
    return f"proc:{fields[19]}" if len(fields) > 19 else None


def parent(pid: int) -> int | None:
    """The parent pid of ``pid`` (``None``: no such process, or unknown)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        if Path("/proc/self").is_dir():
            return None
        stat = ""
    except OSError:
        stat = ""
    found = stat.rpartition(")")[2].split()[1:2] if stat else []
    if not found:
        found = (_ps_column(pid, "ppid", "") or "").split()
    return int(found[0]) if found and found[0].isdigit() else None


def program_name(pid: int) -> str | None:
    """The name of the program ``pid`` runs (``None``: unknown)."""
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip() or None
    except OSError:
        names = ps_program(pid)
        return Path(names[0]).name if names else None


# Session managers that adopt the orphans of the processes below them
# (PR_SET_CHILD_SUBREAPER): ``systemd --user`` on a Linux desktop, say.
_REAPERS = frozenset({"systemd", "init"})


def orphaned(pid: int) -> bool:
    """Whether ``pid``'s parent died: it was handed to init (pid 1 of its pid namespace)
    or to a session manager that adopts orphans. ``False`` when this cannot be told.

    Only meaningful for a process known to have been started by a process that is
    neither of those (a server started by a Python program, say)."""
    ppid = parent(pid)
    if ppid is None or ppid <= 0:  # 0: a parent outside this pid namespace
        return False
    return ppid == 1 or program_name(ppid) in _REAPERS


def ps_program(pid: int) -> list[str]:
    """The program of ``pid`` as ``ps`` names it (``[]``: unknown)."""
    name = _ps_column(pid, "comm", "")
    return [name] if name else []


def _ps_column(pid: int, column: str, prefix: str) -> str | None:
    """``ps -o <column>=`` of ``pid`` (``prefix:`` before it when given), in UTC and the
    C locale so that every process reads the same text; ``None``: unknown."""
    env = {**os.environ, "TZ": "UTC0", "LC_ALL": "C"}
    try:
        listed = subprocess.run(
            ["ps", "-o", f"{column}=", "-p", str(pid)],
            capture_output=True, text=True, timeout=5, check=False, env=env,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    value = " ".join(listed.stdout.split())
    if not value:
        return None
    return f"{prefix}:{value}" if prefix else value
