"""No two cache names share a key, whichever tiers they name (real servers).

Thread ids are any text, so a name under ``a:session`` would share keys with
``SessionStore("a")``; a tool entry is ``{name}:tool:{tool}:{digest}``, so an LLM entry,
an embedding or a thread under ``a:tool`` would be a tool entry of ``ToolCache("a")``.
Such names are refused when a tier is built; the SCANs of ``clear`` and the
invalidations match digests only, so they never take a key of another name.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from agent_memory.cache import (
    EmbeddingCache,
    LlmCache,
    SessionStore,
    SyncEmbeddingCache,
    SyncLlmCache,
    SyncSessionStore,
    SyncToolCache,
    ToolCache,
)
from agent_memory.errors import InvalidInputError
from tests.cache.conftest import CHAT_PARAMS, FLAVOURS, Flavour, open_env

TIERS = {
    "llm": (LlmCache, SyncLlmCache),
    "tool": (ToolCache, SyncToolCache),
    "session": (SessionStore, SyncSessionStore),
    "embedding": (EmbeddingCache, SyncEmbeddingCache),
}
TWO = [FLAVOURS[0], FLAVOURS[-1]]  # a sync and an async client


def _refused(tier: str) -> list[str]:
    """Names of ``tier`` whose keys another tier under ``a`` could have."""
    names = ["a:session", "a:session:t", "a:session:"]
    return names if tier == "tool" else [*names, "a:tool", "x:y:tool"]


@pytest.mark.parametrize("flavour", TWO, ids=lambda f: f.id)
@pytest.mark.parametrize(("tier", "name"), [(t, n) for t in TIERS for n in _refused(t)])
async def test_a_name_another_tier_could_share_keys_with_is_refused(
    flavour: Flavour, plain_server: Any, tier: str, name: str
) -> None:
    async for env in open_env(flavour, plain_server.url, False):
        with pytest.raises(InvalidInputError) as info:
            env.make(*TIERS[tier], name=name)
        assert info.value.field == "name"


@pytest.mark.parametrize("flavour", TWO, ids=lambda f: f.id)
@pytest.mark.parametrize("tier", list(TIERS))
async def test_names_that_share_no_key_are_accepted(
    flavour: Flavour, plain_server: Any, tier: str
) -> None:
    async for env in open_env(flavour, plain_server.url, False):
        for name in ("a:sessions", "a:session-x", "a:tools", "a:tool:x", "session:a"):
            env.make(*TIERS[tier], name=name)
        if tier == "tool":  # a tool cache's own keys under a:tool are not tool entries
            env.make(*TIERS[tier], name="a:tool")


def _thread_id(prefix: str) -> str:
    """A thread id whose key has as many characters after the other tier's ``prefix``
    as a digest."""
    return "t" * (64 - len(prefix))


@pytest.mark.parametrize("flavour", TWO, ids=lambda f: f.id)
async def test_clear_and_invalidations_take_no_key_of_another_name(
    flavour: Flavour, plain_server: Any
) -> None:
    """A session thread under ``n:llm``, ``n:emb`` or ``n:tool:x`` whose key is as long
    as an entry's survives ``clear`` / ``invalidate_by_tool`` of the tiers named ``n``."""
    async for env in open_env(flavour, plain_server.url, False):
        llm = env.make(LlmCache, SyncLlmCache)
        tool = env.make(ToolCache, SyncToolCache)
        vectors = env.make(EmbeddingCache, SyncEmbeddingCache)
        await llm.store(CHAT_PARAMS, "r")
        await tool.store("x", {"q": 1}, "r")
        await vectors.put_many("m", ["a"], [np.ones(2)])
        threads = []
        for prefix in ("llm", "emb", "tool:x"):
            sessions = env.make(SessionStore, SyncSessionStore, name=f"{env.name}:{prefix}")
            thread = _thread_id("session:")
            await sessions.set(thread, "k", "kept")
            threads.append((sessions, thread))
        assert await llm.clear() == 1
        assert await vectors.clear() == 1
        assert await tool.invalidate_by_tool("x") == 1
        for sessions, thread in threads:
            assert await sessions.get(thread, "k") == "kept"
