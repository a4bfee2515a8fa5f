"""The session service's operations: generators run by the async runner.

Each yields the commands of one round trip at a time and returns ADK values:
``create`` and ``get`` are one round trip (two when a new session brings ``app:``
state), ``append`` one (two when its event carries an ``app:`` delta), ``delete`` and
``user_state`` one, ``list`` two (three for every user of an app).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from google.adk.sessions.base_session_service import GetSessionConfig
from google.adk.sessions.session import Session

from agent_memory.core import replies
from agent_memory.core.effects import Command, Operation, command, execute_batch
from agent_memory.core.replies import raise_first_error
from agent_memory.errors import ReplyParseError
from agent_memory.integrations.adk import codec, scripts
from agent_memory.integrations.adk.layout import Layout

MISSING, DUPLICATE, STALE, APPENDED = "missing", "duplicate", "stale", "appended"


def _script(source: str, keys: tuple[str, ...], *args: str) -> Command:
    return command("EVAL", source, str(len(keys)), *keys, *args)


def _user_keys(layout: Layout, app: str, user: str, sid: str) -> tuple[str, ...]:
    return (
        *layout.session(app, user, sid).all,
        layout.sessions(app, user),
        layout.user_state(app, user),
    )


def _app_write(layout: Layout, app: str, delta: Mapping[str, Any], ttl_ms: int) -> list[Command]:
    if not delta:
        return []
    key = layout.app_state(app)
    writes = [command("HSET", key, *codec.flat_pairs(delta))]
    return writes + ([command("PEXPIRE", key, ttl_ms)] if ttl_ms else [])


def _app_touch(layout: Layout, app: str, ttl_ms: int) -> list[Command]:
    """The TTL refresh of the app's keys (``app:`` state and list of users) that every
    read or write of one of its sessions sends: they live while a session is in use."""
    if not ttl_ms:
        return []
    return [command("PEXPIRE", key, ttl_ms) for key in (layout.app_state(app), layout.users(app))]


def _status(reply: Any) -> tuple[int, list[Any]]:
    if not isinstance(reply, (list, tuple)) or not reply:
        raise ReplyParseError(f"unexpected script reply {reply!r}")
    return replies.integer(reply[0]), list(reply[1:])


def create(
    layout: Layout,
    app: str,
    user: str,
    sid: str,
    state: Mapping[str, Any] | None,
    now: float,
    ttl_ms: int,
) -> Operation[Session | None]:
    """Create a session; ``None`` when one with that id exists (nothing written)."""
    app_delta, user_delta, session_state = codec.split_state(state)
    pairs = codec.flat_pairs(session_state)
    create_cmd = _script(
        scripts.CREATE, _user_keys(layout, app, user, sid), sid, codec.time_text(now),
        str(ttl_ms), str(len(pairs) // 2), *pairs, *codec.flat_pairs(user_delta),
    )  # fmt: skip
    app_writes = _app_write(layout, app, app_delta, ttl_ms)
    tail = [command("HGETALL", layout.app_state(app)), command("SADD", layout.users(app), user)]
    tail += _app_touch(layout, app, ttl_ms)
    if app_writes:  # app state changes only once the session is known to be new
        got = yield from execute_batch([create_cmd])
    else:
        got = yield from execute_batch([create_cmd, *tail])
    raise_first_error(got)
    status, rest = _status(got[0])
    if status == 0:
        return None
    if app_writes:
        more = yield from execute_batch([*app_writes, *tail])
        raise_first_error(more)
        got = [got[0], *more[len(app_writes) :]]
    return Session(
        id=sid,
        app_name=app,
        user_id=user,
        state=codec.merged_state(got[1], rest[0], pairs),  # pairs: a hash reply's shape
        events=[],
        last_update_time=now,
    )


def get(
    layout: Layout,
    app: str,
    user: str,
    sid: str,
    config: GetSessionConfig | None,
    ttl_ms: int,
) -> Operation[Session | None]:
    """A session with merged state and its (filtered) events; ``None`` when absent."""
    recent = "" if config is None or config.num_recent_events is None else config.num_recent_events
    after = "" if config is None or config.after_timestamp is None else config.after_timestamp
    get_cmd = _script(
        scripts.GET, _user_keys(layout, app, user, sid),
        str(recent), "" if after == "" else codec.time_text(float(after)), str(ttl_ms),
    )  # fmt: skip
    app_read = command("HGETALL", layout.app_state(app))
    got = yield from execute_batch([get_cmd, app_read, *_app_touch(layout, app, ttl_ms)])
    raise_first_error(got)
    status, rest = _status(got[0])
    if status == 0:
        return None
    updated, session_state, user_state, events = rest
    return Session(
        id=sid,
        app_name=app,
        user_id=user,
        state=codec.merged_state(got[1], user_state, session_state),
        events=[codec.decode_event(raw) for raw in events],
        last_update_time=replies.number(updated),
    )


def append(
    layout: Layout,
    session: Session,
    event_id: str,
    event_json: str,
    timestamp: float,
    delta: Mapping[str, Any] | None,
    ttl_ms: int,
) -> Operation[tuple[str, float | None]]:
    """Store one event and its state delta; ``(status, stored time when stale)``."""
    app, user, sid = session.app_name, session.user_id, session.id
    app_delta, user_delta, session_delta = codec.split_state(delta)
    pairs = codec.flat_pairs(session_delta)
    last_event = session.events[-1].id if session.events else ""
    append_cmd = _script(
        scripts.APPEND, _user_keys(layout, app, user, sid), sid, event_id, event_json,
        codec.time_text(timestamp), codec.time_text(session.last_update_time), last_event,
        str(ttl_ms), str(len(pairs) // 2), *pairs, *codec.flat_pairs(user_delta),
    )  # fmt: skip
    app_writes = _app_write(layout, app, app_delta, ttl_ms)  # validated before any write
    got = yield from execute_batch([append_cmd, *_app_touch(layout, app, ttl_ms)])
    raise_first_error(got)
    status, rest = _status(got[0])
    if status == 0:
        return MISSING, None
    if status == 2:
        return DUPLICATE, None
    if status == 3:
        return STALE, replies.number(rest[0])
    if app_writes:
        raise_first_error((yield from execute_batch(app_writes)))
    return APPENDED, None


def delete(layout: Layout, app: str, user: str, sid: str) -> Operation[None]:
    """Delete a session and its events (no-op when absent). One atomic round trip."""
    keys = (*layout.session(app, user, sid).all, layout.sessions(app, user))
    got = yield from execute_batch([_script(scripts.DELETE, keys, sid)])
    raise_first_error(got)


def user_state(layout: Layout, app: str, user: str) -> Operation[dict[str, Any]]:
    """The user's ``user:`` state, keys without prefix."""
    got = yield from execute_batch([command("HGETALL", layout.user_state(app, user))])
    raise_first_error(got)
    return codec.decode_state(got[0])


def list_sessions(layout: Layout, app: str, user: str | None) -> Operation[list[Session]]:
    """Sessions of one user (or of every user of the app) without events, ordered by
    ``(last_update_time, user_id, id)``."""
    head = [command("HGETALL", layout.app_state(app))]
    if user is None:
        head.append(command("SMEMBERS", layout.users(app)))
    got = yield from execute_batch(head)
    raise_first_error(got)
    app_state = got[0]
    users = [user] if user is not None else sorted(replies.text(u) for u in got[1])
    per_user = []
    for uid in users:
        per_user += [
            command("ZRANGE", layout.sessions(app, uid), "0", "-1"),
            command("HGETALL", layout.user_state(app, uid)),
        ]
    got = yield from execute_batch(per_user)
    raise_first_error(got)
    wanted: list[tuple[str, str, Any]] = []
    for i, uid in enumerate(users):
        for sid in got[2 * i]:
            wanted.append((uid, replies.text(sid), got[2 * i + 1]))
    reads = []
    for uid, sid, _ in wanted:
        keys = layout.session(app, uid, sid)
        reads += [command("HGET", keys.meta, "t"), command("HGETALL", keys.state)]
    got = yield from execute_batch(reads)
    raise_first_error(got)
    sessions = [
        Session(
            id=sid,
            app_name=app,
            user_id=uid,
            state=codec.merged_state(app_state, user_reply, got[2 * i + 1]),
            events=[],
            last_update_time=replies.number(got[2 * i]),
        )
        for i, (uid, sid, user_reply) in enumerate(wanted)
        if got[2 * i] is not None  # expired since the index was read
    ]
    sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
    return sessions


__all__ = ["APPENDED", "DUPLICATE", "MISSING", "STALE"]
