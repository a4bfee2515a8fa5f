"""The two runners: the only code that drives operations against real I/O."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from agent_memory.core.clients import AsyncExecutor, SyncExecutor
from agent_memory.core.effects import (
    Batch,
    Call,
    Command,
    Effect,
    Operation,
    ScanKeys,
    Sleep,
    T,
    listed,
)
from agent_memory.errors import InvalidInputError


def _misuse(effect: Effect) -> InvalidInputError:
    return InvalidInputError(f"operation yielded an unknown effect {effect!r}")


SpanFactory = Callable[[str], AbstractContextManager[Any]]

# A pause (``effects.pause``) gives the event loop back whenever other operations of the
# library run on it; an operation running alone keeps the loop for up to
# LONE_TURN_SECONDS before pausing, since each pause costs a loop iteration (~15 us).
# Measured on the lag scenario and a lone recall, alternating: pausing every time costs a
# lone FT recall 3.2% (0.5 ms: 1.7%, 1 ms: 0.4%), while 1 ms turns at the end of a burst
# of recalls (the last one runs alone) raised the loop's lag p99 by ~0.3 ms; 0.5 ms
# turns did not (2.72 against 2.97 ms, five runs each).
LONE_TURN_SECONDS = 0.0005
_running: dict[int, int] = {}  # operations in flight, by id() of their event loop


def _no_span(_: str) -> AbstractContextManager[Any]:
    return contextlib.nullcontext()


def is_async_callable(fn: Callable[..., Any]) -> bool:
    """Whether calling ``fn`` returns a coroutine without doing the work itself: an
    ``async def`` function, a partial of one, or an object whose ``__call__`` is one."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    dunder = next(
        (c.__dict__["__call__"] for c in type(fn).__mro__ if "__call__" in c.__dict__), None
    )
    return dunder is not None and inspect.iscoroutinefunction(dunder)


def _called(fn: Callable[..., Any], args: tuple[Any, ...], as_list: bool) -> Any:
    try:
        result = fn(*args)
    except StopIteration as exc:
        # It cannot cross an asyncio Future (the awaiting task would never wake) and
        # would end an operation thrown into it: re-raised as what it is, a failure.
        raise RuntimeError(f"the callback raised StopIteration: {exc}") from exc
    return listed(result) if as_list else result


async def call_off_loop(fn: Callable[..., Any], *args: Any, as_list: bool = False) -> Any:
    """Call a user callback without blocking the event loop.

    An async callback runs on the loop; any other runs in the loop's default thread
    pool (with the caller's context, so tracing spans stay connected), and an
    awaitable it returns is awaited on the loop. With ``as_list``, an iterator the
    callback returns is consumed where it ran (a blocking one's in its worker thread).
    """
    if is_async_callable(fn):
        result = fn(*args)
    else:
        result = await asyncio.to_thread(_called, fn, args, as_list)
    if inspect.isawaitable(result):
        result = await result
    return listed(result) if as_list else result


def run_sync(op: Operation[T], executor: SyncExecutor, call_span: SpanFactory = _no_span) -> T:
    """Drive ``op`` to completion with blocking I/O.

    ``call_span(what)`` wraps each user callback (e.g. the embedder) in a child span.
    """
    send_value: Any = None
    error: BaseException | None = None
    while True:
        try:
            effect = op.throw(error) if error is not None else op.send(send_value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send_value, error = None, None
        try:
            if isinstance(effect, Command):
                send_value = executor.command(effect)
            elif isinstance(effect, Batch):
                send_value = executor.batch(effect)
            elif isinstance(effect, ScanKeys):
                send_value = executor.scan(effect)
            elif isinstance(effect, Sleep):
                if effect.seconds > 0:
                    time.sleep(effect.seconds)
            elif isinstance(effect, Call):
                with call_span(effect.what):
                    send_value = _called(effect.fn, effect.args, effect.listed)
                if inspect.isawaitable(send_value):
                    close = getattr(send_value, "close", None)
                    if close is not None:
                        close()  # silence "coroutine was never awaited"
                    raise InvalidInputError(
                        f"the {effect.what} returned an awaitable; a sync store needs a "
                        f"sync {effect.what} (use MemoryStore for async callbacks)",
                        field=effect.what,
                    )
            else:
                raise _misuse(effect)
        except Exception as exc:  # noqa: BLE001 - delivered into the operation, which decides
            error = exc
        except BaseException:
            op.close()  # abandoned (interrupted): the operation notes what it must undo
            raise


async def run_async(
    op: Operation[T], executor: AsyncExecutor, call_span: SpanFactory = _no_span
) -> T:
    """Drive ``op`` to completion on the running event loop.

    User callbacks (embedders, summarisers, extractors, labelers) never run on the loop
    unless they are ``async``: a blocking one runs in a worker thread (:func:`call_off_loop`).
    """
    loop = id(asyncio.get_running_loop())
    _running[loop] = _running.get(loop, 0) + 1
    try:
        return await _drive(op, executor, call_span, loop)
    finally:
        if _running[loop] > 1:
            _running[loop] -= 1
        else:
            del _running[loop]


async def _drive(op: Operation[T], executor: AsyncExecutor, call_span: SpanFactory, loop: int) -> T:
    send_value: Any = None
    error: BaseException | None = None
    resumed = time.perf_counter()  # when this turn on the loop began
    while True:
        try:
            effect = op.throw(error) if error is not None else op.send(send_value)
        except StopIteration as stop:
            return stop.value  # type: ignore[no-any-return]
        send_value, error = None, None
        try:
            if isinstance(effect, Command):
                send_value = await executor.command(effect)
            elif isinstance(effect, Batch):
                send_value = await executor.batch(effect)
            elif isinstance(effect, ScanKeys):
                send_value = await executor.scan(effect)
            elif isinstance(effect, Sleep):
                shared = _running[loop] > 1
                if (
                    effect.seconds > 0
                    or shared
                    or time.perf_counter() - resumed >= LONE_TURN_SECONDS
                ):
                    await asyncio.sleep(effect.seconds)
                    send_value = shared
                else:
                    send_value = False
                    continue  # alone on the loop, and not for long: no turn to give
            elif isinstance(effect, Call):
                with call_span(effect.what):
                    send_value = await call_off_loop(effect.fn, *effect.args, as_list=effect.listed)
            else:
                raise _misuse(effect)
        except Exception as exc:  # noqa: BLE001 - delivered into the operation, which decides
            error = exc
        except BaseException:
            op.close()  # abandoned (cancelled): the operation notes what it must undo
            raise
        resumed = time.perf_counter()
