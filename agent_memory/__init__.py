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
    "InvalidInputError",
    "ListResult",
    "MemoryHit",
    "MemoryItem",
    "NotFoundError",
    "OperationTimeoutError",
    "RecallResult",
    "RecallWeights",
    "ReplyParseError",
    "Scope",
    "ServerResponseError",
    "ServerUnavailableError",
    "StoreClosedError",
    "__version__",
]
