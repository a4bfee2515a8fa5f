"""agent-memory: durable, shared, semantic memory for AI agents on Valkey."""

from agent_memory._version import __version__
from agent_memory.errors import (
    AgentMemoryError,
    CapabilityError,
    IndexMismatchError,
    InvalidInputError,
    NotFoundError,
    OperationTimeoutError,
    ReplyParseError,
    ServerResponseError,
    ServerUnavailableError,
    StoreClosedError,
)
from agent_memory.store.memory_store import MemoryStore
from agent_memory.store.ops.ensure import IndexStatus
from agent_memory.store.ops.read import MemoryStats
from agent_memory.store.ops.write import MemoryInput
from agent_memory.store.sync_store import SyncMemoryStore
from agent_memory.store.types import (
    Fact,
    ListResult,
    MemoryHit,
    MemoryItem,
    RecallResult,
    RecallWeights,
    Scope,
)

__all__ = [
    "AgentMemoryError",
    "CapabilityError",
    "Fact",
    "IndexMismatchError",
    "IndexStatus",
    "InvalidInputError",
    "ListResult",
    "MemoryHit",
    "MemoryInput",
    "MemoryItem",
    "MemoryStats",
    "MemoryStore",
    "NotFoundError",
    "OperationTimeoutError",
    "RecallResult",
    "RecallWeights",
    "ReplyParseError",
    "Scope",
    "ServerResponseError",
    "ServerUnavailableError",
    "StoreClosedError",
    "SyncMemoryStore",
    "__version__",
]
