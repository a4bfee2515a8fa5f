"""Encoding of ADK session state and events for the session service (pure).

State values are stored as JSON text, one hash field per key; a value is first turned
into JSON data with pydantic's ``to_jsonable_python`` (datetimes, models, bytes...), as
ADK's own persistent services do, so it reads back as that JSON data. Keys and values
must be valid Unicode: a lone surrogate is refused (``InvalidInputError`` naming the
key) before anything is written, as the event holding a state delta is refused by
pydantic's JSON writer. Events are stored
as ``Event.model_dump_json(exclude_none=True)`` and read with
``Event.model_validate_json``, as ADK's SQLite service stores them.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from google.adk.events.event import Event
from google.adk.sessions.state import State
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError, to_jsonable_python

from agent_memory.core import replies
from agent_memory.core.checks import check_str
from agent_memory.errors import InvalidInputError, ReplyParseError


def split_state(state: Mapping[str, Any] | None) -> tuple[dict[str, Any], ...]:
    """``(app, user, session)`` deltas of a state mapping: ``app:`` and ``user:`` keys
    lose their prefix, ``temp:`` keys are dropped (never persisted).

    Raises:
        InvalidInputError: not a mapping with ``str`` keys of valid Unicode.
    """
    app: dict[str, Any] = {}
    user: dict[str, Any] = {}
    session: dict[str, Any] = {}
    if state is None:
        return app, user, session
    if not isinstance(state, Mapping):
        raise InvalidInputError("state must be a dict", field="state")
    for key, value in state.items():
        _check_key(key)
        if key.startswith(State.APP_PREFIX):
            app[key.removeprefix(State.APP_PREFIX)] = value
        elif key.startswith(State.USER_PREFIX):
            user[key.removeprefix(State.USER_PREFIX)] = value
        elif not key.startswith(State.TEMP_PREFIX):
            session[key] = value
    return app, user, session


def _check_key(key: object) -> None:
    """Raise unless ``key`` is a ``str`` of valid Unicode (a hash field's name).

    Raises:
        InvalidInputError: naming the key.
    """
    if not isinstance(key, str):
        raise InvalidInputError(f"state keys must be str, got {key!r}", field="state")
    try:
        check_str(key, field="state key")
    except InvalidInputError as exc:
        raise InvalidInputError(f"state key {key!r}: {exc}", field="state") from None


def encode_value(value: Any, key: str) -> str:
    """The JSON text stored for one state value (valid UTF-8).

    Raises:
        InvalidInputError: the value has no JSON form (a callable, say) or holds text
            that is not valid Unicode (a lone surrogate).
    """
    try:
        text = json.dumps(to_jsonable_python(value), ensure_ascii=False, separators=(",", ":"))
    except (PydanticSerializationError, TypeError, ValueError, RecursionError) as exc:
        raise InvalidInputError(
            f"state value of {key!r} is not JSON-serialisable: {exc}", field="state"
        ) from exc
    try:
        check_str(text, field="state value")
    except InvalidInputError:
        raise InvalidInputError(
            f"state value of {key!r} holds text that is not valid Unicode (a lone surrogate)",
            field="state",
        ) from None
    return text


def flat_pairs(delta: Mapping[str, Any]) -> list[str]:
    """``[key, JSON, key, JSON, ...]`` of a state delta.

    Raises:
        InvalidInputError: a value has no JSON form.
    """
    out: list[str] = []
    for key, value in delta.items():
        out += [key, encode_value(value, key)]
    return out


def decode_state(reply: Any, prefix: str = "") -> dict[str, Any]:
    """A state hash reply as ``{prefix + key: value}``.

    Raises:
        ReplyParseError: a field that is not JSON.
    """
    out: dict[str, Any] = {}
    for key, raw in replies.pairs(reply).items():
        try:
            out[prefix + key] = json.loads(replies.text(raw))
        except ValueError as exc:
            raise ReplyParseError(f"state field {key!r} does not hold JSON") from exc
    return out


def merged_state(app: Any, user: Any, session: Any) -> dict[str, Any]:
    """A session's state as ADK returns it: its own keys, then ``app:`` and ``user:``
    keys with their prefix (from the three hash replies).

    Raises:
        ReplyParseError: a field that is not JSON.
    """
    state = decode_state(session)
    state.update(decode_state(app, State.APP_PREFIX))
    state.update(decode_state(user, State.USER_PREFIX))
    return state


def encode_event(event: Event) -> str:
    """The stored form of an event (its ``temp:`` state keys already removed).

    Raises:
        InvalidInputError: the event cannot be serialised.
    """
    try:
        return event.model_dump_json(exclude_none=True)
    except (PydanticSerializationError, ValueError) as exc:
        raise InvalidInputError(f"event cannot be serialised: {exc}", field="event") from exc


def decode_event(raw: Any) -> Event:
    """An event from its stored form.

    Raises:
        ReplyParseError: the stored text is not an ADK event.
    """
    try:
        return Event.model_validate_json(replies.text(raw))
    except ValidationError as exc:
        raise ReplyParseError(f"a stored event is not an ADK Event: {exc}") from exc


def persisted_event(event: Event) -> Event:
    """A copy of ``event`` whose state delta has no ``temp:`` key (what is stored)."""
    delta = event.actions.state_delta if event.actions else None
    if not delta or not any(k.startswith(State.TEMP_PREFIX) for k in delta):
        return event
    kept = {k: v for k, v in delta.items() if not k.startswith(State.TEMP_PREFIX)}
    actions = event.actions.model_copy(update={"state_delta": kept})
    return event.model_copy(update={"actions": actions})


def time_text(value: float) -> str:
    """A timestamp as text that reads back as the same float (Python and Lua)."""
    return repr(float(value))


__all__ = [
    "decode_event",
    "decode_state",
    "encode_event",
    "encode_value",
    "flat_pairs",
    "merged_state",
    "persisted_event",
    "split_state",
    "time_text",
]
