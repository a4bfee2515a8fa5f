"""A long-term memory block for LlamaIndex's ``Memory`` (the ``llama-index`` extra).

>>> block = AgentMemoryBlock(store=store, scope=Scope(namespace="acme", agent_id="assistant"))
>>> memory = Memory.from_defaults(session_id="user-42", memory_blocks=[block])

When ``Memory``'s short-term queue passes its token limit, the messages it flushes are
handed to :meth:`AgentMemoryBlock.aput`: the text of each one whose role is in ``roles``
becomes a memory of the :class:`~agent_memory.MemoryStore` (one ``remember_many``), in
the scope the application bound, with the role and LlamaIndex session id as metadata.
Each ``memory.aget()`` asks the block for content: the text of the latest
``retrieval_context_window`` messages is the query of one recall in that scope, and the
``k`` best memories come back as a bulleted list that ``Memory`` puts in its memory
template (system message by default).

The scope is fixed: a LlamaIndex ``session_id`` never widens or narrows it, and nothing
a message says can choose a namespace, agent, thread or session.

``Memory``'s blocking methods (``put``, ``get``...) run each call in an event loop of
their own, which an asyncio client cannot serve (its connections belong to the loop
they were opened in). For them, pass ``sync_store=`` (a
:class:`~agent_memory.SyncMemoryStore` of the same store): the block then serves every
call through it, in a worker thread.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from llama_index.core.base.llms.types import ChatMessage, TextBlock
from llama_index.core.bridge.pydantic import Field
from llama_index.core.memory.memory import BaseMemoryBlock

from agent_memory.errors import InvalidInputError
from agent_memory.integrations._memory_tools import check_store_and_scope
from agent_memory.integrations._texts import clean_text, fit_text
from agent_memory.schema.types import Scope
from agent_memory.store.memory_store import MemoryStore
from agent_memory.store.ops.write import MemoryInput
from agent_memory.store.sync_store import SyncMemoryStore

logger = logging.getLogger(__name__)

_OWNER = "AgentMemoryBlock"
_LOOP_NOTE = "LlamaIndex's Memory calls its blocks on its event loop"


def message_text(message: ChatMessage) -> str:
    """The text blocks of ``message`` joined by newlines, stripped (pure)."""
    return "\n".join(b.text for b in message.blocks if isinstance(b, TextBlock)).strip()


def _role(message: ChatMessage) -> str:
    role = message.role
    return str(getattr(role, "value", role))


def _positive(value: object, field: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise InvalidInputError(f"{field} must be a positive int, got {value!r}", field=field)


class AgentMemoryBlock(BaseMemoryBlock[str]):
    """Long-term memory of a LlamaIndex ``Memory`` in this library (see the module doc).

    Args:
        store: the async :class:`~agent_memory.MemoryStore` (its index ensured).
        scope: the :class:`~agent_memory.Scope` every memory is written to and recalled
            from.
        name: the block's name in ``Memory``'s template.
        k: how many memories a recall returns at most.
        retrieval_context_window: how many of the latest messages make the query.
        roles: the roles whose flushed messages are remembered.
        importance: the importance of each memory written (0..1).
        priority: ``Memory``'s truncation priority (0: never truncated).
        sync_store: a :class:`~agent_memory.SyncMemoryStore` of the same store, for
            ``Memory``'s blocking methods: when given, every call goes through it in a
            worker thread (see the module doc).

    A flushed text longer than the store accepts (its ``max_content_bytes``, 32 KiB by
    default) is cut to that many UTF-8 bytes at a character boundary, logged and counted
    (``agent_memory_events{event="truncated_contents"}`` of the serving store's metrics),
    and remembered with the rest of the flush: ``Memory`` has already archived those
    messages, so refusing the batch would lose all of them.

    :meth:`aput` and :meth:`aget` raise :mod:`agent_memory.errors` exceptions
    (``ServerUnavailableError`` / ``OperationTimeoutError`` ...).

    Raises:
        InvalidInputError: not a ``MemoryStore`` (a ``SyncMemoryStore`` included), not a
            ``Scope``, a ``sync_store`` that is not a ``SyncMemoryStore``, or a bad ``k``,
            window, role list or importance.
    """

    name: str = Field(default="long_term_memory", description="The name of the block.")
    store: MemoryStore = Field(description="The agent-memory MemoryStore.", exclude=True)
    scope: Scope = Field(description="The scope memories are written to and recalled from.")
    k: int = Field(default=5, description="How many memories a recall returns at most.")
    retrieval_context_window: int = Field(
        default=3, description="How many of the latest messages make the recall's query."
    )
    roles: tuple[str, ...] = Field(
        default=("user", "assistant"), description="The roles whose messages are remembered."
    )
    importance: float = Field(default=0.5, description="Importance of each memory (0..1).")
    sync_store: SyncMemoryStore | None = Field(
        default=None, description="The blocking store for Memory's blocking calls.", exclude=True
    )

    def __init__(self, *, store: MemoryStore, scope: Scope, **data: Any) -> None:
        check_store_and_scope(store, scope, owner=_OWNER, loop_note=_LOOP_NOTE)
        sync_store = data.get("sync_store")
        if sync_store is not None and not isinstance(sync_store, SyncMemoryStore):
            raise InvalidInputError("sync_store must be a SyncMemoryStore", field="sync_store")
        _positive(data.get("k", 5), "k")
        _positive(data.get("retrieval_context_window", 3), "retrieval_context_window")
        roles = data.get("roles", ("user", "assistant"))
        if isinstance(roles, str) or not all(isinstance(r, str) for r in roles):
            raise InvalidInputError("roles must be a list of role names", field="roles")
        importance = data.get("importance", 0.5)
        if (
            isinstance(importance, bool)
            or not isinstance(importance, (int, float))
            or not (0.0 <= importance <= 1.0)
        ):
            raise InvalidInputError("importance must be a number in [0, 1]", field="importance")
        super().__init__(store=store, scope=scope, **data)  # type: ignore[call-arg]  # pydantic fields

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """The memories recalled for the latest messages, one ``- `` line each (``""``
        when there is no text to ask with, or nothing relevant)."""
        window = (messages or [])[-self.retrieval_context_window :]
        query = "\n".join(t for t in map(message_text, window) if t)
        if not query:
            return ""
        if self.sync_store is not None:
            result = await asyncio.to_thread(
                self.sync_store.recall, query, scope=self.scope, k=self.k
            )
        else:
            result = await self.store.recall(query, scope=self.scope, k=self.k)
        return "\n".join(f"- {hit.item.content}" for hit in result)

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Remember the text of each message whose role is in ``roles`` (one batch);
        a text over the store's limit is cut to it (logged and counted)."""
        serving: MemoryStore | SyncMemoryStore = self.sync_store or self.store
        limit, cut, cleaned = serving.max_content_bytes, 0, 0
        items = []
        for message in messages:
            text, role = message_text(message), _role(message)
            if not text or role not in self.roles:
                continue
            text, was_cleaned = clean_text(text)
            cleaned += was_cleaned
            text = text.strip()
            if not text:
                continue
            text, was_cut = fit_text(text, limit)
            cut += was_cut
            metadata: dict[str, Any] = {"role": role, "source": "llama_index"}
            session_id = message.additional_kwargs.get("session_id")
            if isinstance(session_id, str):
                metadata["session_id"] = session_id
            items.append(
                MemoryInput(
                    content=text, importance=self.importance, scope=self.scope, metadata=metadata
                )
            )
        if cut:
            serving.report_truncated("flushed LlamaIndex message text(s)", cut)
        if cleaned:
            logger.warning(
                "%d flushed LlamaIndex message text(s) held control characters or lone "
                "surrogates the store refuses: remembered with spaces / U+FFFD instead",
                cleaned,
            )
        if items and self.sync_store is not None:
            await asyncio.to_thread(self.sync_store.remember_many, items)
        elif items:
            await self.store.remember_many(items)


__all__ = ["AgentMemoryBlock", "clean_text", "fit_text", "message_text"]
