"""Short-term cache tiers: LLM responses, tool results, session state and embeddings.

Each tier works on any Valkey or Redis (no module needed), standalone or cluster, with
an asyncio class (``LlmCache``...) and a blocking twin (``SyncLlmCache``...) over the
same operations. Counters go to ``{name}:__stats`` (see :mod:`agent_memory.cache.stats`);
the key layout is described in :mod:`agent_memory.cache.keys`.
"""

from agent_memory.cache.llm import LlmCacheResult, TokenUsage
from agent_memory.cache.llm_params import EXCLUDED_PARAMS
from agent_memory.cache.prices import ModelPrice, PriceTable
from agent_memory.cache.stats import CacheStats, ToolStats
from agent_memory.cache.sync_tiers import (
    SyncEmbeddingCache,
    SyncLlmCache,
    SyncSessionStore,
    SyncToolCache,
)
from agent_memory.cache.tiers import EmbeddingCache, LlmCache, SessionStore, ToolCache
from agent_memory.cache.tool_core import ToolCacheResult, ToolEffectiveness, ToolPolicy

__all__ = [
    "EXCLUDED_PARAMS",
    "CacheStats",
    "EmbeddingCache",
    "LlmCache",
    "LlmCacheResult",
    "ModelPrice",
    "PriceTable",
    "SessionStore",
    "SyncEmbeddingCache",
    "SyncLlmCache",
    "SyncSessionStore",
    "SyncToolCache",
    "TokenUsage",
    "ToolCache",
    "ToolCacheResult",
    "ToolEffectiveness",
    "ToolPolicy",
    "ToolStats",
]
