"""agent-memory: durable, shared, semantic memory for AI agents on Valkey."""

from agent_memory._version import __version__
from agent_memory.cache import (
    CacheStats,
    EmbeddingCache,
    LlmCache,
    LlmCacheResult,
    ModelPrice,
    PriceTable,
    SessionStore,
    SyncEmbeddingCache,
    SyncLlmCache,
    SyncSessionStore,
    SyncToolCache,
    TokenUsage,
    ToolCache,
    ToolCacheResult,
    ToolEffectiveness,
    ToolPolicy,
    ToolStats,
)
from agent_memory.errors import (
    AgentMemoryError,
    CapabilityError,
    EmbedderError,
    IndexMismatchError,
    InvalidInputError,
    NotFoundError,
    OperationTimeoutError,
    ReplicationTimeoutError,
    ReplyParseError,
    ServerResponseError,
    ServerUnavailableError,
    StoreClosedError,
    WrongTypeError,
)
from agent_memory.facade.agent import AgentMemory, AgentStats
from agent_memory.facade.sync_agent import SyncAgentMemory
from agent_memory.schema.labels import LabelPolicy
from agent_memory.schema.types import (
    Fact,
    ListResult,
    MemoryHit,
    MemoryItem,
    RecallResult,
    RecallWeights,
    Scope,
)
from agent_memory.schema.utility import Forgetting
from agent_memory.store.memory_store import MemoryStore
from agent_memory.store.ops.adopt import AdoptionReport
from agent_memory.store.ops.consolidate import ConsolidationResult
from agent_memory.store.ops.ensure import IndexStatus
from agent_memory.store.ops.learn import PruneResult
from agent_memory.store.ops.read import MemoryStats
from agent_memory.store.ops.write import MemoryInput
from agent_memory.store.sync_store import SyncMemoryStore
from agent_memory.tool import MemoryTool, SyncMemoryTool, memory_tool

__all__ = [
    "AdoptionReport",
    "AgentMemory",
    "AgentMemoryError",
    "AgentStats",
    "CacheStats",
    "CapabilityError",
    "ConsolidationResult",
    "EmbedderError",
    "EmbeddingCache",
    "Fact",
    "Forgetting",
    "IndexMismatchError",
    "IndexStatus",
    "InvalidInputError",
    "LabelPolicy",
    "ListResult",
    "LlmCache",
    "LlmCacheResult",
    "MemoryHit",
    "MemoryInput",
    "MemoryItem",
    "MemoryStats",
    "MemoryStore",
    "MemoryTool",
    "ModelPrice",
    "NotFoundError",
    "OperationTimeoutError",
    "PriceTable",
    "PruneResult",
    "RecallResult",
    "RecallWeights",
    "ReplicationTimeoutError",
    "ReplyParseError",
    "Scope",
    "ServerResponseError",
    "ServerUnavailableError",
    "SessionStore",
    "StoreClosedError",
    "SyncAgentMemory",
    "SyncEmbeddingCache",
    "SyncLlmCache",
    "SyncMemoryStore",
    "SyncMemoryTool",
    "SyncSessionStore",
    "SyncToolCache",
    "TokenUsage",
    "ToolCache",
    "ToolCacheResult",
    "ToolEffectiveness",
    "ToolPolicy",
    "ToolStats",
    "WrongTypeError",
    "__version__",
    "memory_tool",
]
