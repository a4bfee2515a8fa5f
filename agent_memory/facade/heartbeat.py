"""Background heartbeats: an asyncio task (async facade) or a daemon thread (sync)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable

logger = logging.getLogger(__name__)


class AsyncHeartbeat:
    """Calls ``beat()`` every ``interval`` seconds on the running loop until stopped.

    A failing beat (whatever it raises) is logged and counted through ``on_failure``;
    the loop goes on, so discovery recovers by itself after a server restart. ``stop()`` lets a beat in
    flight finish rather than cancelling it mid-command, which could leave its write
    queued on a stalled server, to land after the caller deleted the heartbeat. A
    cancelled ``stop()`` cancels that beat too: the caller is about to release what
    the beat uses (the store, the client), which a beat going on would use again.
    """

    def __init__(
        self,
        beat: Callable[[], Awaitable[None]],
        interval: float,
        on_failure: Callable[[Exception], None],
    ) -> None:
        self._beat = beat
        self._interval = interval
        self._on_failure = on_failure
        self._task: asyncio.Task[None] | None = None
        self._stopping: asyncio.Event | None = None
        self._stopped = False

    def start(self) -> bool:
        """Start the beats (unless they run); ``False``, starting nothing, once
        :meth:`stop` was called: the owner is closing."""
        if self._stopped:
            return False
        if self._task is None or self._task.done():
            self._stopping = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._loop(self._stopping))
        return True

    async def _loop(self, stopping: asyncio.Event) -> None:
        while not stopping.is_set():
            # Waking up by timeout is the normal case: it is time for a beat.
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(stopping.wait(), timeout=self._interval)
            if stopping.is_set():
                return
            try:
                await self._beat()
            except Exception as exc:  # noqa: BLE001 - logged and counted; the beats go on
                self._on_failure(exc)

    async def stop(self) -> None:
        """Return once no beat runs or will run: after it, the caller may delete what
        the beats write. A beat in flight is waited for, as long as its commands take
        (bounded by the client's timeouts). Cancelling ``stop()`` cancels it: it sends
        nothing more (a connection it was reading from is dropped, not reused), though a
        write it sent may still land (a heartbeat expires by itself). For good: a later
        :meth:`start` starts nothing."""
        self._stopped = True
        task, self._task = self._task, None
        if task is None or self._stopping is None:
            return
        self._stopping.set()
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            task.cancel()  # it ends at its next step, before it could send anything more
            raise


class SyncHeartbeat:
    """Calls ``beat()`` every ``interval`` seconds from a daemon thread until stopped
    (a failing beat is handled as :class:`AsyncHeartbeat` does).

    Its owner may start and stop it from different threads: :meth:`start` checks and
    starts under a lock that :meth:`stop` takes to mark it stopped, so a start that
    :meth:`stop` overtook starts nothing, and two starts at once start one thread. The
    lock is not held while :meth:`stop` waits for a beat in flight."""

    def __init__(
        self, beat: Callable[[], None], interval: float, on_failure: Callable[[Exception], None]
    ) -> None:
        self._beat = beat
        self._interval = interval
        self._on_failure = on_failure
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None
        self._stopped = False
        self._lock = threading.Lock()

    def start(self) -> bool:
        """Start the beats (unless they run); ``False``, starting nothing, once
        :meth:`stop` was called: the owner is closing."""
        with self._lock:
            if self._stopped:
                return False
            if self._thread is None or not self._thread.is_alive():
                self._stopping.clear()
                self._thread = threading.Thread(
                    target=self._loop, name="agent-memory-heartbeat", daemon=True
                )
                self._thread.start()
            return True

    def _loop(self) -> None:
        while not self._stopping.wait(self._interval):
            try:
                self._beat()
            except Exception as exc:  # noqa: BLE001 - logged and counted; the beats go on
                self._on_failure(exc)

    def stop(self) -> None:
        """Return once no beat runs or will run: after it, the caller may delete what
        the beats write. A beat in flight is waited for, as long as its commands take
        (bounded by the client's timeouts): given up on, its write could land after
        that delete, on a server that stalled. For good: a later :meth:`start` starts
        nothing."""
        with self._lock:
            self._stopped = True
            self._stopping.set()
            thread, self._thread = self._thread, None
        if thread is not None:
            thread.join()
