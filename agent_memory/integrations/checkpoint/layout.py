"""Key layout of the checkpointer and validation of LangGraph configs (pure).

Every key of one thread carries the same hash tag, built from a digest of the thread id,
so a thread lives in one hash slot of a cluster and every multi-key command or script
of a thread is cluster-safe::

    {name}:cp:{<t>}:ns            HASH   checkpoint_ns -> thread_id (the thread's namespaces)
    {name}:cp:{<t>}:<n>:ids       ZSET   checkpoint ids of one namespace (score 0, by id)
    {name}:cp:{<t>}:<n>:c         HASH   per checkpoint: c:<id> checkpoint, m:<id> metadata,
                                         p:<id> parent id, r:<id> run id, b:<id> blob fields,
                                         w:<id> write fields
    {name}:cp:{<t>}:<n>:v         HASH   b:<json [channel, version]> channel value,
                                         w:<id digest>:<task digest>:<idx> pending write
    {name}:cp:run:{<r>}           SET    JSON [thread_id, checkpoint_ns, checkpoint_id] of
                                         every checkpoint of one run (for delete_for_runs)

``<t>`` is 32 hex digits of SHA-256 of the thread id, ``<n>`` 16 of the namespace and
``<r>`` 32 of the run id. The three keys of one ``(thread, namespace)`` are a *lane*.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agent_memory.core.checks import check_str
from agent_memory.errors import InvalidInputError
from agent_memory.integrations._keys import digest

DEFAULT_NAME = "langgraph"
_GLOB_SPECIALS = "*?[]\\"


@dataclass(frozen=True, slots=True)
class Lane:
    """The keys holding one ``(thread_id, checkpoint_ns)``.

    Attributes:
        thread_id: the LangGraph thread id.
        checkpoint_ns: the checkpoint namespace (``""``: the root graph).
        ids: the ZSET of checkpoint ids.
        records: the HASH of checkpoint records.
        values: the HASH of channel values and pending writes.
        namespaces: the thread's HASH of namespaces (same slot).
    """

    thread_id: str
    checkpoint_ns: str
    ids: str
    records: str
    values: str
    namespaces: str

    @property
    def keys(self) -> tuple[str, str, str, str]:
        """The four keys every lane script is given, in its ``KEYS`` order."""
        return (self.ids, self.records, self.values, self.namespaces)


@dataclass(frozen=True, slots=True)
class Layout:
    """Builds every key of a checkpointer named ``name``."""

    name: str = DEFAULT_NAME

    @property
    def prefix(self) -> str:
        """The prefix every key starts with."""
        return f"{self.name}:cp"

    def thread(self, thread_id: str) -> str:
        """The hash-tagged root of a thread's keys."""
        return f"{self.prefix}:{{{digest(thread_id, 32)}}}"

    def namespaces(self, thread_id: str) -> str:
        """The thread's HASH of namespaces."""
        return f"{self.thread(thread_id)}:ns"

    def lane(self, thread_id: str, checkpoint_ns: str) -> Lane:
        """The keys of one ``(thread_id, checkpoint_ns)``."""
        root = self.thread(thread_id)
        base = f"{root}:{digest(checkpoint_ns, 16)}"
        return Lane(thread_id, checkpoint_ns, f"{base}:ids", f"{base}:c", f"{base}:v", f"{root}:ns")

    def run(self, run_id: str) -> str:
        """The SET indexing one run's checkpoints."""
        return f"{self.prefix}:run:{{{digest(run_id, 32)}}}"

    def namespaces_pattern(self) -> str:
        """A SCAN pattern matching every thread's HASH of namespaces."""
        escaped = "".join("\\" + c if c in _GLOB_SPECIALS else c for c in self.prefix)
        return escaped + ":{*}:ns"


def run_member(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> str:
    """A member of a run's SET: where one of its checkpoints lives."""
    return json.dumps([thread_id, checkpoint_ns, checkpoint_id], ensure_ascii=False)


def parse_run_member(member: str) -> tuple[str, str, str] | None:
    """The ``(thread_id, checkpoint_ns, checkpoint_id)`` of a run member (``None``: not
    one of ours)."""
    try:
        value = json.loads(member)
    except ValueError:
        return None
    if isinstance(value, list) and len(value) == 3 and all(isinstance(v, str) for v in value):
        return value[0], value[1], value[2]
    return None


def thread_id_of(value: object, *, field: str = "thread_id") -> str:
    """A thread id as ``str`` (``str``, ``int`` and ``UUID`` are accepted, as LangGraph
    configs carry them).

    Raises:
        InvalidInputError: missing, empty, of another type, or not valid Unicode (a lone
            surrogate cannot be sent to the server).
    """
    if isinstance(value, bool) or not isinstance(value, (str, int, uuid.UUID)):
        raise InvalidInputError(
            f"{field} must be a str (or int / UUID), got {type(value).__name__}", field=field
        )
    return check_str(str(value), field=field, non_empty=True)


def id_list(values: object, *, field: str) -> list[str]:
    """A list of thread or run ids, each as :func:`thread_id_of` takes it. A bare
    ``str`` (or ``bytes``) is refused: read as an iterable it would be one id per
    character, and ``prune("ab")`` would prune threads ``"a"`` and ``"b"``.

    Raises:
        InvalidInputError: not an iterable of ids, or a bad id in it.
    """
    if isinstance(values, (str, bytes, bytearray)) or not isinstance(values, Iterable):
        raise InvalidInputError(
            f"{field} must be a list of ids, got {type(values).__name__}", field=field
        )
    return [thread_id_of(value, field=field) for value in values]


@dataclass(frozen=True, slots=True)
class Target:
    """What a config points at: a thread, a namespace and maybe one checkpoint."""

    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str | None


def _configurable(config: object, what: str) -> Mapping[str, Any]:
    if not isinstance(config, Mapping):
        raise InvalidInputError(f"{what} must be a RunnableConfig mapping", field=what)
    configurable = config.get("configurable")
    if not isinstance(configurable, Mapping):
        raise InvalidInputError(f"{what} has no 'configurable' mapping", field=what)
    return configurable


def _checkpoint_id(value: object, what: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InvalidInputError(
            f"{what}: checkpoint_id must be a str, got {type(value).__name__}", field=what
        )
    return check_str(value, field=what)


def target(config: object, *, what: str = "config") -> Target:
    """The thread, namespace and checkpoint a config names.

    Raises:
        InvalidInputError: not a config, no usable ``thread_id``, or a namespace or
            checkpoint id that is not a ``str`` of valid Unicode.
    """
    configurable = _configurable(config, what)
    if "thread_id" not in configurable:
        raise InvalidInputError(f"{what} has no configurable.thread_id", field="thread_id")
    namespace = configurable.get("checkpoint_ns", "")
    if namespace is None:
        namespace = ""
    if not isinstance(namespace, str):
        raise InvalidInputError(
            f"checkpoint_ns must be a str, got {type(namespace).__name__}", field="checkpoint_ns"
        )
    check_str(namespace, field="checkpoint_ns")
    return Target(
        thread_id_of(configurable["thread_id"]),
        namespace,
        _checkpoint_id(configurable.get("checkpoint_id"), what),
    )


def list_scope(config: object) -> tuple[str | None, str | None, str | None]:
    """The ``(thread_id, checkpoint_ns, checkpoint_id)`` a ``list`` config narrows to;
    ``None`` for each part it leaves open (no config: every thread).

    Raises:
        InvalidInputError: as :func:`target`.
    """
    if config is None:
        return None, None, None
    configurable = _configurable(config, "config")
    thread = configurable.get("thread_id")
    namespace = configurable.get("checkpoint_ns")
    if namespace is not None:
        check_str(namespace, field="checkpoint_ns")
    return (
        None if thread is None else thread_id_of(thread),
        namespace,
        _checkpoint_id(configurable.get("checkpoint_id"), "config"),
    )


def before_id(before: object) -> str | None:
    """The checkpoint id of a ``before`` config (``None``: no cursor).

    Raises:
        InvalidInputError: ``before`` is not a config.
    """
    if before is None:
        return None
    return _checkpoint_id(_configurable(before, "before").get("checkpoint_id"), "before")


def checkpoint_config(thread_id: str, checkpoint_ns: str, checkpoint_id: str) -> dict[str, Any]:
    """The config LangGraph expects back for a stored checkpoint."""
    return {
        "configurable": {
            "thread_id": thread_id,
            "checkpoint_ns": checkpoint_ns,
            "checkpoint_id": checkpoint_id,
        }
    }
