"""Key layout of the ADK session service (pure).

Every key of one ``(app_name, user_id)`` carries one hash tag, built from a digest of
the pair, so a user's sessions, events and ``user:`` state live in one hash slot and
every script touching them is cluster-safe. The ``app:`` state and the app's list of
users carry another tag (a digest of the app name)::

    {name}:adk:{<u>}:sessions     ZSET   session id -> last update time (seconds)
    {name}:adk:{<u>}:user         HASH   user: state, key (no prefix) -> JSON value
    {name}:adk:{<u>}:m:<sid>      HASH   t: last update time, c: creation time,
                                         last: id of the last event
    {name}:adk:{<u>}:s:<sid>      HASH   session state, key -> JSON value
    {name}:adk:{<u>}:e:<sid>      LIST   events (``Event.model_dump_json``), in append order
    {name}:adk:{<u>}:t:<sid>      LIST   the events' timestamps, same order
    {name}:adk:{<u>}:d:<sid>      HASH   event id -> SHA-1 of its JSON (re-delivery check)
    {name}:adk:{<a>}:app          HASH   app: state, key (no prefix) -> JSON value
    {name}:adk:{<a>}:users        SET    user ids with sessions (for list_sessions(user_id=None))

``<u>`` and ``<a>`` are 32 hex digits of SHA-256 of ``["user", app, user]`` and
``["app", app]`` (JSON). The session id ends its keys, after a one-letter kind, so no
session id can reach another session's (or another kind's) key.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_memory.core.checks import check_str
from agent_memory.integrations._keys import check_name, digest_of_parts

DEFAULT_NAME = "adk"
MAX_ID_CHARS = 1024


def check_id(value: object, field: str) -> str:
    """An app name, user id or session id, validated.

    Raises:
        InvalidInputError: not a non-empty ``str`` of valid Unicode (no lone surrogate)
            of at most 1024 characters.
    """
    return check_str(value, field=field, non_empty=True, max_chars=MAX_ID_CHARS)


@dataclass(frozen=True, slots=True)
class SessionKeys:
    """The keys of one session (all in its user's hash slot)."""

    meta: str
    state: str
    events: str
    timestamps: str
    digests: str

    @property
    def all(self) -> tuple[str, str, str, str, str]:
        """Every key of the session, in the scripts' ``KEYS`` order."""
        return (self.meta, self.state, self.events, self.timestamps, self.digests)


@dataclass(frozen=True, slots=True)
class Layout:
    """Builds every key of a session service named ``name``."""

    name: str = DEFAULT_NAME

    def user_root(self, app_name: str, user_id: str) -> str:
        """The hash-tagged root of one (app, user)'s keys."""
        return f"{self.name}:adk:{{{digest_of_parts(['user', app_name, user_id])}}}"

    def app_root(self, app_name: str) -> str:
        """The hash-tagged root of one app's keys."""
        return f"{self.name}:adk:{{{digest_of_parts(['app', app_name])}}}"

    def sessions(self, app_name: str, user_id: str) -> str:
        """The user's ZSET of session ids by last update time."""
        return f"{self.user_root(app_name, user_id)}:sessions"

    def user_state(self, app_name: str, user_id: str) -> str:
        """The user's ``user:`` state HASH."""
        return f"{self.user_root(app_name, user_id)}:user"

    def app_state(self, app_name: str) -> str:
        """The app's ``app:`` state HASH."""
        return f"{self.app_root(app_name)}:app"

    def users(self, app_name: str) -> str:
        """The app's SET of user ids."""
        return f"{self.app_root(app_name)}:users"

    def session(self, app_name: str, user_id: str, session_id: str) -> SessionKeys:
        """The keys of one session."""
        root = self.user_root(app_name, user_id)
        return SessionKeys(
            meta=f"{root}:m:{session_id}",
            state=f"{root}:s:{session_id}",
            events=f"{root}:e:{session_id}",
            timestamps=f"{root}:t:{session_id}",
            digests=f"{root}:d:{session_id}",
        )


__all__ = ["DEFAULT_NAME", "Layout", "SessionKeys", "check_id", "check_name"]
