"""Key and field layout of the memory store (compatible with the BetterDB ecosystem).

Memories are hashes at ``{name}:mem:{id}`` indexed by ``{name}:mem:idx``. The fields the
TypeScript library reads (``content``, ``vector``, ``importance``, ``created_at``,
``last_accessed_at``, ``access_count``, ``tags``, ``threadId``, ``agentId``,
``namespace``, ``source``, ``subject``, ``date``) keep their meaning; indexed scope and
tag fields hold tokens (see :mod:`agent_memory.schema.encoding`), identical to the raw
value for plain ASCII alphanumerics. Our extra fields keep the exact raw values.

Bookkeeping keys live outside the index prefix so the index never sees them:
``{name}:__mem_reg:{ns}`` (ids of a namespace, scored by expiry),
``{name}:__mem_namespaces`` (every namespace token written, so that ``stats`` and
``prune`` never walk the keyspace for the registries),
``{name}:__mem_scope:{digest}`` (ids of one exact scope, for capacity),
``{name}:__mem_claim:{digest}`` (a ``dedupe=True`` writer's short-lived claim on that
scope, a string with a lease),
``{name}:__mem_epoch:{ns}`` (bumped when stored vectors or filters change),
``{name}:__mem_df:{ns}`` (term statistics of the lexical channel: ``n``, ``len``,
``t:<term>``),
``{name}:__mem_use`` (per-read counters, so a recall never writes an indexed document
for them: field ``x:<id>`` counts exposures and ``a:<id>`` accesses, added to the
``exposures`` / ``access_count`` fields of the hash, which other writers may keep),
``{name}:__mem_meta`` (store identity), ``{name}:__mem_stats``, ``{name}:__mem_config``.
"""

from __future__ import annotations

import hashlib

# Hash fields shared with the TypeScript library.
F_CONTENT = "content"
F_VECTOR = "vector"
# The embedding again, for session-scoped memories only, in a FLAT index field: a
# session's pool is a small share of the index, which valkey-search searches exactly
# only in a FLAT field (an HNSW search of a filter holding more than 0.1% of the index
# walks the graph until it meets enough of the filter's members).
F_SESSION_VECTOR = "svec"
F_IMPORTANCE = "importance"
F_CREATED = "created_at"
F_ACCESSED = "last_accessed_at"
F_ACCESS_COUNT = "access_count"
F_TAGS = "tags"
F_THREAD = "threadId"
F_AGENT = "agentId"
F_NAMESPACE = "namespace"
F_SOURCE = "source"
F_SUBJECT = "subject"
F_DATE = "date"
# Our own fields.
F_ID = "id"
F_SESSION = "session"
F_SCOPE_RAW = "scope_json"
F_TAGS_RAW = "tags_json"
F_EXPIRES = "expires_at"
F_METADATA = "metadata_json"
F_LABELS = "labels"
F_LABELS_RAW = "labels_json"
F_EXPOSURES = "exposures"
F_EVAL_SUM = "eval_sum"
F_EVAL_WEIGHT = "eval_weight"
F_MANUAL = "manual_utility"
F_CONTEXTS = "utility_ctx"
F_REINFORCED = "last_reinforced_at"
F_LEX = "lex"  # hashed term vector of the content (agent_memory.schema.lexical)
F_LEX_TEXT = "lex_text"  # the content's analysed terms, for a server-side TEXT index
F_LEX_TERMS = "lex_terms"  # a token per distinct term (TAG): the lexical candidate filter
F_SEQ = "seq"  # write order within the store (ties of created_at)

USAGE_EXPOSURES = "x:"  # ``{name}:__mem_use`` field prefix: exposures of a memory
USAGE_ACCESSES = "a:"  # ``{name}:__mem_use`` field prefix: accesses (reinforced recalls)
# ``{name}:__mem_meta`` field set once ``{name}:__mem_namespaces`` lists every namespace
# (a store written before that set existed is scanned once to fill it).
NAMESPACES_META_FIELD = "namespaces"
NAMESPACES_VERSION = "v1"

TAG_SEPARATOR = ","
# 2: the ``lex`` field, its FLAT IP index field and the ``__mem_df`` term statistics.
# 3: per-read counters in ``{name}:__mem_use`` (a recall never writes an indexed
#    document but to refresh ``last_accessed_at``, at most once per recency step), the
#    lexical channel in a TEXT field (``lex_text``) where the server has full text, and
#    no index on ``last_accessed_at`` / ``access_count``.
# 4: ``lex_terms`` beside ``lex`` (a TAG of the content's term tokens): the lexical
#    channel of the vector form searches only the memories holding the query's rarest
#    terms instead of scanning the whole namespace; ``svec``, a FLAT copy of the
#    embedding of session-scoped memories, searched for a recall's session pool.
# Older stores are upgraded in place by ``ensure_index`` (the backend's prepare).
SCHEMA_VERSION = 4
DISTANCE_ALIAS = "__dist"
META_LEXICAL = "lexical"  # ``{name}:__mem_meta`` field naming the analyzer of ``lex``

# Fields a recall reads back (never the vector blob).
ITEM_FIELDS: tuple[str, ...] = (
    F_ID,
    F_CONTENT,
    F_IMPORTANCE,
    F_CREATED,
    F_ACCESSED,
    F_ACCESS_COUNT,
    F_TAGS,
    F_THREAD,
    F_AGENT,
    F_NAMESPACE,
    F_SOURCE,
    F_SUBJECT,
    F_DATE,
    F_SESSION,
    F_SCOPE_RAW,
    F_TAGS_RAW,
    F_EXPIRES,
    F_METADATA,
    F_LABELS_RAW,
    F_EXPOSURES,
    F_EVAL_SUM,
    F_EVAL_WEIGHT,
    F_MANUAL,
    F_CONTEXTS,
    F_REINFORCED,
    F_SEQ,
)

# Fields that decide whether forgetting suppresses a memory.
RETENTION_FIELDS: tuple[str, ...] = (
    F_IMPORTANCE,
    F_CREATED,
    F_EVAL_SUM,
    F_EVAL_WEIGHT,
    F_MANUAL,
    F_REINFORCED,
)

# Fields the portable backend needs to filter and rank without the content.
FILTER_FIELDS: tuple[str, ...] = (F_AGENT, F_THREAD, F_SESSION, F_TAGS, F_SOURCE, F_LABELS)


INDEX_SEGMENT = "mem"
"""The segment after the name in a memory's key ``{name}:mem:{id}``: the store's index
prefix is ``{name}:mem:``."""


class Keys:
    """Every key of one store, derived from its ``name``."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def prefix(self) -> str:
        return f"{self.name}:{INDEX_SEGMENT}:"

    @property
    def index(self) -> str:
        return f"{self.prefix}idx"

    def memory(self, memory_id: str) -> str:
        return f"{self.prefix}{memory_id}"

    def id_of(self, key: str) -> str:
        return key[len(self.prefix) :] if key.startswith(self.prefix) else key

    def registry(self, namespace_token: str) -> str:
        return f"{self.name}:__mem_reg:{namespace_token}"

    def agent_index(self, namespace_token: str, agent_token: str) -> str:
        """Ids of one agent in a namespace, scored by expiry like the registry."""
        return f"{self.name}:__mem_agent:{namespace_token}:{agent_token}"

    def thread_index(self, namespace_token: str, thread_token: str) -> str:
        """Ids of one thread in a namespace, scored by expiry like the registry."""
        return f"{self.name}:__mem_thread:{namespace_token}:{thread_token}"

    def member_indexes(
        self, namespace_token: str, agent_token: str | None, thread_token: str | None
    ) -> list[str]:
        """The agent and thread index keys a memory belongs to (besides the registry)."""
        keys = []
        if agent_token:
            keys.append(self.agent_index(namespace_token, agent_token))
        if thread_token:
            keys.append(self.thread_index(namespace_token, thread_token))
        return keys

    def expiry_sets(
        self, namespace_token: str, agent_token: str | None, thread_token: str | None
    ) -> list[str]:
        """Every sorted set that lists a memory scored by its expiry: the namespace
        registry, then its agent and thread indexes (written, re-scored and cleared
        together)."""
        return [
            self.registry(namespace_token),
            *self.member_indexes(namespace_token, agent_token, thread_token),
        ]

    def ghost_suspects(self, namespace_token: str) -> str:
        """Registered ids seen naming no memory, with when (``prune``'s ghost sweep)."""
        return f"{self.name}:__mem_ghost:{namespace_token}"

    @property
    def namespaces(self) -> str:
        """The tokens of every namespace a write registered a memory in (a set; written
        by every write with its registry, filled once from a SCAN for stores written
        before it existed: :data:`NAMESPACES_META_FIELD` of :attr:`meta` says so)."""
        return f"{self.name}:__mem_namespaces"

    def registry_version(self, namespace_token: str) -> str:
        """Bumped whenever the namespace's membership changes (portable mirror)."""
        return f"{self.name}:__mem_regver:{namespace_token}"

    def scope_bucket(self, bucket: str) -> str:
        return f"{self.name}:__mem_scope:{bucket}"

    def scope_claim(self, bucket: str) -> str:
        """A deduplicating writer's short-lived claim on one exact scope."""
        return f"{self.name}:__mem_claim:{bucket}"

    def epoch(self, namespace_token: str) -> str:
        return f"{self.name}:__mem_epoch:{namespace_token}"

    def term_stats(self, namespace_token: str) -> str:
        """Term statistics of a namespace's lexical channel (one key: cluster-safe)."""
        return f"{self.name}:__mem_df:{namespace_token}"

    def receipt(self, selection_id: str) -> str:
        return f"{self.name}:__mem_receipt:{selection_id}"

    @property
    def receipts(self) -> str:
        return f"{self.name}:__mem_receipts"

    @property
    def sequence(self) -> str:
        """The store's write counter (the ``seq`` of each memory)."""
        return f"{self.name}:__mem_seq"

    @property
    def usage(self) -> str:
        """Per-read counters of every memory (one hash: cheap to bump, never indexed)."""
        return f"{self.name}:__mem_use"

    def usage_fields(self, memory_id: str) -> tuple[str, str]:
        """The exposure and access fields of a memory in :attr:`usage`."""
        return USAGE_EXPOSURES + memory_id, USAGE_ACCESSES + memory_id

    @property
    def meta(self) -> str:
        return f"{self.name}:__mem_meta"

    @property
    def stats(self) -> str:
        return f"{self.name}:__mem_stats"

    @property
    def config(self) -> str:
        return f"{self.name}:__mem_config"


def bucket_digest(namespace: str, agent: str, thread: str, session: str) -> str:
    """Digest naming one exact scope (the unit of ``max_items_per_scope``)."""
    joined = "\x1f".join((namespace, agent, thread, session)).encode("utf-8")
    return hashlib.blake2b(joined, digest_size=16).hexdigest()
