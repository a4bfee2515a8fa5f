"""Opening a resource whose start blocks (the embedded server) from async code.

:class:`Opening` is what the async facade's ``embedded()`` returns: ``await`` it for the
opened object, or use it as ``async with`` to also initialize and close it. Either way
the blocking start runs in the loop's default thread pool, never on the event loop.
The sync facade's twin, :func:`opened_now`, simply runs the start.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Generator
from typing import Any, Generic, Protocol, TypeVar

from agent_memory.errors import InvalidInputError

logger = logging.getLogger(__name__)


class AsyncResource(Protocol):
    """What an :class:`Opening` opens: closable, and an async context manager."""

    async def close(self) -> None: ...

    async def __aenter__(self) -> Any: ...

    async def __aexit__(self, *exc_info: object) -> None: ...


R = TypeVar("R", bound=AsyncResource)
T = TypeVar("T")


class Opening(Generic[R]):
    """A resource still to open: ``await`` it, or ``async with`` it.

    Nothing starts until then, and each ``await`` opens a new resource (one ``async
    with`` block at a time uses it as a context manager). The start runs in a worker
    thread; if the awaiting task is cancelled meanwhile, the start is let finish (a
    thread cannot be interrupted) and what it opened is closed again before the
    cancellation propagates, so nothing is left running.
    """

    __slots__ = ("_opened", "_start")

    def __init__(self, start: Callable[[], R]) -> None:
        self._start = start
        self._opened: R | None = None

    def __await__(self) -> Generator[Any, None, R]:
        return self._open().__await__()

    async def _open(self) -> R:
        started = asyncio.ensure_future(asyncio.to_thread(self._start))
        try:
            return await asyncio.shield(started)
        except asyncio.CancelledError:
            # The thread runs on whatever happens: wait for it (through any further
            # cancellation), then close what it opened, before propagating.
            closing = asyncio.ensure_future(_close_when_started(started))
            while not closing.done():
                try:
                    await asyncio.shield(closing)
                except asyncio.CancelledError:
                    continue
            raise

    async def __aenter__(self) -> R:
        if self._opened is not None:
            raise InvalidInputError("this opening is already in use by an async with block")
        opened = await self
        await opened.__aenter__()  # which closes the resource again when it fails
        self._opened = opened
        return opened

    async def __aexit__(self, *exc_info: object) -> None:
        opened, self._opened = self._opened, None
        if opened is not None:
            await opened.__aexit__(*exc_info)


async def _close_when_started(started: asyncio.Future[R]) -> None:
    try:
        opened = await started
        await opened.close()
    except Exception as exc:  # noqa: BLE001 - logged; the caller sees the cancellation
        logger.warning("closing what a cancelled opening started failed: %r", exc)


def opened_now(start: Callable[[], T]) -> T:
    """The blocking twin of :class:`Opening`: run the start and return what it opened."""
    return start()
