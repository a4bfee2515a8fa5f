"""How a chat store keeps its messages: one JSON document per list element (pure).

Each LlamaIndex ``ChatMessage`` is written with its own ``model_dump_json()`` (the
serialisation LlamaIndex's Redis and SQL chat stores use: ``additional_kwargs`` through
``ChatMessage``'s own serializer) and read back with ``ChatMessage.model_validate_json``,
so a message read back equals the one stored, blocks, role and kwargs included. An
element that is not valid JSON or not a message this LlamaIndex can read is *corrupt*:
reads skip it and count it.
"""

from __future__ import annotations

from collections.abc import Sequence

import pydantic
from llama_index.core.llms import ChatMessage
from pydantic_core import PydanticSerializationError

from agent_memory.errors import InvalidInputError


def encode_message(message: object, *, field: str = "message") -> bytes:
    """The stored form of one message (pure).

    Raises:
        InvalidInputError: not a ``ChatMessage``, or one that cannot be serialised.
    """
    if not isinstance(message, ChatMessage):
        raise InvalidInputError(
            f"{field} must be a llama_index ChatMessage, got {type(message).__name__}",
            field=field,
        )
    try:
        return message.model_dump_json().encode("utf-8", "surrogatepass")
    except (PydanticSerializationError, ValueError, TypeError) as exc:
        raise InvalidInputError(f"{field} cannot be serialised: {exc}", field=field) from None


def encode_messages(messages: object) -> list[bytes]:
    """The stored forms of ``messages``, in order; nothing when any is invalid (pure).

    Raises:
        InvalidInputError: not a list of ``ChatMessage``, or one cannot be serialised.
    """
    if isinstance(messages, (str, bytes, dict)) or not isinstance(messages, Sequence):
        raise InvalidInputError(
            f"messages must be a list of ChatMessage, got {type(messages).__name__}",
            field="messages",
        )
    return [encode_message(m, field=f"messages[{i}]") for i, m in enumerate(messages)]


def decode_message(raw: object) -> ChatMessage | None:
    """The message a stored element holds, or ``None`` when it is corrupt (pure)."""
    if isinstance(raw, (bytearray, memoryview)):
        raw = bytes(raw)
    if not isinstance(raw, (str, bytes)):
        return None
    try:
        return ChatMessage.model_validate_json(raw)
    except (pydantic.ValidationError, ValueError, RecursionError):
        return None


__all__ = ["decode_message", "encode_message", "encode_messages"]
