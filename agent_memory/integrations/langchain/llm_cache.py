"""A LangChain ``BaseCache`` over agent-memory's LLM cache tier (the ``langchain`` extra).

>>> from langchain_core.globals import set_llm_cache
>>> set_llm_cache(AgentMemoryCache.from_url("redis://localhost:6379", name="my_agent"))

Exact match: an entry is the LLM tier entry of the request ``{"model": model,
"prompt": prompt, "llm_string": llm_string}`` (``{name}:llm:{sha256}``, see
:mod:`agent_memory.cache.llm_params`), so every parameter LangChain puts in its
``llm_string`` (model, temperature, stop words, bound tools...) is part of the key.
``model`` is the model name found in the ``llm_string`` (``model_name``, ``model`` or
``model_id``; else the LangChain ``_type``; else ``"langchain"``): it labels the entry for
``LlmCache.invalidate_by_model`` and prices its hits.

The stored response is a JSON list with one object per generation
(``{"type": "ChatGeneration", "message": message_to_dict(...), "generation_info": ...}``,
or ``"Generation"`` with ``"text"``; chunk classes keep their type), so a lookup returns
generations equal to those stored, message content, tool calls and usage included. The
token usage of chat generations (``usage_metadata``) is stored with the entry, so a hit
adds the cost it saved to ``{name}:__stats``. An entry that is not such a list (written by
something else) is a miss, logged and counted in ``corrupt_entries``; the tier, which reads
the entry before the adapter, has counted that lookup as a hit.

``clear()`` deletes every LLM entry of the cache name (a SCAN of every primary),
LangChain's or not: give LangChain a name of its own to clear it alone.

Entries are not shared with BetterDB agent-cache's LangChain adapter: it keys only the
model, three sampling parameters and the prompt (two requests differing in, say, stop
words share its entry) and keeps only the text of each generation.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeGuard

from langchain_core.caches import RETURN_VAL_TYPE, BaseCache
from langchain_core.messages import message_to_dict, messages_from_dict
from langchain_core.outputs import (
    ChatGeneration,
    ChatGenerationChunk,
    Generation,
    GenerationChunk,
)

from agent_memory.cache import LlmCache, SyncLlmCache, TokenUsage
from agent_memory.cache.keys import plain
from agent_memory.cache.llm import LlmCacheResult
from agent_memory.core.client_factory import (
    close_async_client,
    close_sync_client,
    released_on_failure,
)
from agent_memory.errors import CapabilityError, InvalidInputError
from agent_memory.integrations._runners import clients_from_url

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "langchain"
_MODEL = re.compile(r"""["'](?:model_name|model|model_id)["']\s*[:,]\s*["']([^"']+)["']""")
_TYPE = re.compile(r"""["']_type["']\s*[:,]\s*["']([^"']+)["']""")
_GENERATIONS: dict[str, type[Generation]] = {
    "Generation": Generation,
    "GenerationChunk": GenerationChunk,
    "ChatGeneration": ChatGeneration,
    "ChatGenerationChunk": ChatGenerationChunk,
}


def model_of_llm_string(llm_string: str) -> str:
    """The model name LangChain wrote into ``llm_string`` (pure; see the module doc)."""
    found = _MODEL.search(llm_string) or _TYPE.search(llm_string)
    return found.group(1) if found else DEFAULT_MODEL


def request_of(prompt: str, llm_string: str) -> dict[str, Any]:
    """The LLM-tier request a LangChain lookup is keyed by (pure).

    Raises:
        InvalidInputError: ``prompt`` or ``llm_string`` is not a ``str``.
    """
    for field, value in (("prompt", prompt), ("llm_string", llm_string)):
        if not isinstance(value, str):
            raise InvalidInputError(
                f"{field} must be a str, got {type(value).__name__}", field=field
            )
    return {"model": model_of_llm_string(llm_string), "prompt": prompt, "llm_string": llm_string}


def dump_generations(generations: Sequence[Generation]) -> list[dict[str, Any]]:
    """The stored form of ``generations`` (pure).

    Raises:
        InvalidInputError: not a sequence of ``Generation``, or values that are not JSON.
    """
    if isinstance(generations, (str, bytes)) or not isinstance(generations, Sequence):
        raise InvalidInputError("return_val must be a list of Generation", field="return_val")
    out: list[dict[str, Any]] = []
    for generation in generations:
        if not isinstance(generation, Generation):
            raise InvalidInputError(
                f"return_val holds a {type(generation).__name__}, not a Generation",
                field="return_val",
            )
        kind = next(k for k, cls in reversed(_GENERATIONS.items()) if isinstance(generation, cls))
        entry: dict[str, Any] = {"type": kind, "generation_info": generation.generation_info}
        if isinstance(generation, ChatGeneration):
            entry["message"] = message_to_dict(generation.message)
        else:
            entry["text"] = generation.text
        out.append(plain(entry, "return_val"))
    return out


def load_generations(stored: Any) -> list[Generation] | None:
    """Generations from their stored form; ``None`` when it is not one (pure)."""
    return _parse_generations(stored)[0]


def _parse_generations(stored: Any) -> tuple[list[Generation] | None, str]:
    """Generations from their stored form, or ``None`` and why it is not one (pure)."""
    if not isinstance(stored, list):
        return None, f"a JSON {type(stored).__name__}, not a list"
    out: list[Generation] = []
    try:
        for entry in stored:
            cls = _GENERATIONS[entry["type"]]
            info = entry.get("generation_info")
            if issubclass(cls, ChatGeneration):
                (message,) = messages_from_dict([entry["message"]])
                out.append(cls(message=message, generation_info=info))
            else:
                out.append(cls(text=entry["text"], generation_info=info))
    except (KeyError, TypeError, ValueError) as exc:  # pydantic's errors are ValueErrors
        return None, f"not a list of generations ({type(exc).__name__})"
    return out, ""


def _generations_of(
    cache: SyncLlmCache | LlmCache, found: LlmCacheResult
) -> RETURN_VAL_TYPE | None:
    """A lookup's generations; an entry that holds none is reported (logged, counted in
    ``corrupt_entries``) and read as a miss."""
    if not found.hit:
        return None
    generations, why = _parse_generations(found.response)
    if generations is None:
        cache._tier_core().unreadable(found.key, f"{why}; the tier counted its lookup as a hit")
    return generations


def _count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def usage_of(generations: Sequence[Generation]) -> TokenUsage | None:
    """Tokens of the chat generations' ``usage_metadata``, summed (``None``: none known)."""
    tokens_in = tokens_out = 0
    found = False
    for generation in generations:
        message = getattr(generation, "message", None)
        usage = getattr(message, "usage_metadata", None) if message is not None else None
        if not isinstance(usage, Mapping):
            continue
        used_in, used_out = usage.get("input_tokens"), usage.get("output_tokens")
        if _count(used_in) and _count(used_out):
            found = True
            tokens_in += used_in
            tokens_out += used_out
    return TokenUsage(tokens_in, tokens_out) if found else None


class AgentMemoryCache(BaseCache):
    """LangChain ``BaseCache`` over agent-memory's LLM cache tier (see the module doc).

    Args:
        cache: a :class:`~agent_memory.SyncLlmCache`, serving ``lookup`` / ``update`` /
            ``clear`` (and the async methods in a worker thread when ``async_cache`` is
            not given).
        async_cache: a :class:`~agent_memory.LlmCache`, serving ``alookup`` / ``aupdate``
            / ``aclear``.
        ttl: lifetime of the entries written, in seconds (``None``: the tier's default).

    Raises:
        InvalidInputError: neither cache given, a cache of the wrong kind, or a bad TTL.
    """

    def __init__(
        self,
        cache: SyncLlmCache | None = None,
        *,
        async_cache: LlmCache | None = None,
        ttl: float | None = None,
    ) -> None:
        if cache is None and async_cache is None:
            raise InvalidInputError("give a SyncLlmCache, an LlmCache or both", field="cache")
        if cache is not None and not isinstance(cache, SyncLlmCache):
            raise InvalidInputError("cache must be a SyncLlmCache", field="cache")
        if async_cache is not None and not isinstance(async_cache, LlmCache):
            raise InvalidInputError("async_cache must be an LlmCache", field="async_cache")
        if ttl is not None and (
            isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not ttl > 0
        ):
            raise InvalidInputError("ttl must be a positive number of seconds", field="ttl")
        self._cache = cache
        self._async_cache = async_cache
        self._ttl = ttl
        self._owned = False

    @classmethod
    def from_url(
        cls, url: str, *, name: str, ttl: float | None = None, **client_options: Any
    ) -> AgentMemoryCache:
        """A cache with its own blocking and asyncio clients for ``url`` (closed by
        :meth:`close` / :meth:`aclose`); ``client_options`` go to both clients.

        Raises:
            InvalidInputError: a bad URL, client option, name or TTL.
        """
        client, async_client = clients_from_url(url, **client_options)
        with released_on_failure(client, async_client):  # whatever the failure
            result = cls(
                SyncLlmCache(client, name), async_cache=LlmCache(async_client, name), ttl=ttl
            )
        result._owned = True
        return result

    @property
    def sync_cache(self) -> SyncLlmCache | None:
        """The tier serving the blocking methods."""
        return self._cache

    @property
    def async_cache(self) -> LlmCache | None:
        """The tier serving the async methods."""
        return self._async_cache

    def close(self) -> None:
        """Close the blocking client if :meth:`from_url` created it (idempotent)."""
        if self._owned and self._cache is not None:
            close_sync_client(self._cache.client)

    async def aclose(self) -> None:
        """Close both clients if :meth:`from_url` created them (idempotent)."""
        if self._owned and self._async_cache is not None:
            await close_async_client(self._async_cache.client)
        self.close()

    def _sync(self) -> SyncLlmCache:
        if self._cache is None:
            raise CapabilityError(
                "this AgentMemoryCache has only an async LlmCache: use the async methods "
                "(alookup, aupdate, aclear) or pass a SyncLlmCache"
            )
        return self._cache

    def lookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        """The generations stored for ``prompt`` and ``llm_string``, or ``None``.

        Raises:
            CapabilityError: only an async cache was given.
            InvalidInputError: ``prompt`` or ``llm_string`` is not a ``str``.
            AgentMemoryError: a failure of the server (unavailable, timeout, ...).
        """
        cache = self._sync()
        return _generations_of(cache, cache.check(request_of(prompt, llm_string)))

    def update(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        """Store ``return_val`` for ``prompt`` and ``llm_string`` (overwrites).

        Raises:
            CapabilityError: only an async cache was given.
            InvalidInputError: bad arguments (not strings, not generations, not JSON).
            AgentMemoryError: a failure of the server.
        """
        request = request_of(prompt, llm_string)
        stored = dump_generations(return_val)
        tokens = usage_of(return_val)
        self._sync().store(request, stored, tokens=tokens, ttl=self._ttl)

    def clear(self, **kwargs: Any) -> None:
        """Delete every LLM entry of the cache name (``kwargs`` are ignored).

        Raises:
            CapabilityError: only an async cache was given.
            AgentMemoryError: a failure of the server.
        """
        self._sync().clear()

    async def alookup(self, prompt: str, llm_string: str) -> RETURN_VAL_TYPE | None:
        """Async :meth:`lookup` (same errors, but never CapabilityError)."""
        if self._async_cache is None:
            return await asyncio.to_thread(self.lookup, prompt, llm_string)
        found = await self._async_cache.check(request_of(prompt, llm_string))
        return _generations_of(self._async_cache, found)

    async def aupdate(self, prompt: str, llm_string: str, return_val: RETURN_VAL_TYPE) -> None:
        """Async :meth:`update` (same errors, but never CapabilityError)."""
        if self._async_cache is None:
            await asyncio.to_thread(self.update, prompt, llm_string, return_val)
            return
        request = request_of(prompt, llm_string)
        stored = dump_generations(return_val)
        tokens = usage_of(return_val)
        await self._async_cache.store(request, stored, tokens=tokens, ttl=self._ttl)

    async def aclear(self, **kwargs: Any) -> None:
        """Async :meth:`clear` (same errors, but never CapabilityError)."""
        if self._async_cache is None:
            await asyncio.to_thread(self.clear)
            return
        await self._async_cache.clear()


__all__ = [
    "AgentMemoryCache",
    "dump_generations",
    "load_generations",
    "model_of_llm_string",
    "request_of",
]
