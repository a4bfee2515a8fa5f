"""The store's labeler as a best-effort step: its failures are logged and counted."""

from __future__ import annotations

import logging

from agent_memory.backends.context import StoreContext
from agent_memory.core.effects import Operation, call
from agent_memory.errors import InvalidInputError
from agent_memory.schema.labels import Labels, check_labels

logger = logging.getLogger("agent_memory.store")


def labeler_failed(ctx: StoreContext, what: str, exc: Exception) -> None:
    """Log and count a labeler that raised or answered outside the label policy."""
    logger.warning("labeler failed on %s of %s: %s", what, ctx.keys.name, exc)
    ctx.count("labeler_failures")


def run_labeler(ctx: StoreContext, text: str, *, what: str) -> Operation[Labels | None]:
    """The labels the store's labeler gives ``text`` (none without a labeler), or
    ``None`` when it failed.

    Only the user's call is guarded broadly; the library's own check of its answer
    catches only the policy's :class:`InvalidInputError`, so a fault of ours is not
    reported as the labeler's.
    """
    if ctx.settings.labeler is None:
        return {}
    try:
        found = yield from call(ctx.settings.labeler, text, what="labeler")
    except Exception as exc:  # noqa: BLE001 - the user's labeler: best-effort, never fatal
        labeler_failed(ctx, what, exc)
        return None
    try:
        return check_labels(found, ctx.settings.label_policy)
    except InvalidInputError as exc:
        labeler_failed(ctx, what, exc)
        return None
