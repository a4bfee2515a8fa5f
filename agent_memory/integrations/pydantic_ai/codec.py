"""How a conversation's messages are stored: one JSON document per list element (pure).

Each pydantic-ai ``ModelMessage`` (a ``ModelRequest`` or ``ModelResponse``) is written
with pydantic's own serialisation, the settings of ``ModelMessagesTypeAdapter`` (bytes as
base64), so a message read back equals the one stored: tool calls, tool returns,
thinking parts, binary content and timestamps included. An element that is not valid
JSON or not a message this pydantic-ai can read (written by someone else, or by a
release whose message schema this one rejects) is *corrupt*: reads skip it and count it.

A conversation store's ``ConversationRecord`` (:func:`encode_record`) is stored the same
way, with pydantic's serialisation of the dataclass: usage, deferred tool requests, scope,
branches, revision and ``updated_at`` read back equal. Values typed ``Any`` (a deferred
call's metadata) come back as their JSON form, as through pydantic-ai's own
``ConversationTypeAdapter``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pydantic
from pydantic_ai.conversation_store import ConversationRecord
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse
from pydantic_core import PydanticSerializationError

from agent_memory.errors import InvalidInputError

# The element type of ``ModelMessagesTypeAdapter``, with its configuration.
_MESSAGE: pydantic.TypeAdapter[ModelMessage] = pydantic.TypeAdapter(
    ModelMessage,
    config=pydantic.ConfigDict(defer_build=True, ser_json_bytes="base64", val_json_bytes="base64"),
)


def encode_messages(messages: object) -> list[bytes]:
    """The stored form of ``messages``, in order (pure).

    Raises:
        InvalidInputError: ``messages`` is not a list of ``ModelRequest`` /
            ``ModelResponse``, or one cannot be serialised; nothing is written then.
    """
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise InvalidInputError(
            "messages must be a list of pydantic-ai ModelMessage (e.g. result.new_messages()), "
            f"got {type(messages).__name__}",
            field="messages",
        )
    encoded: list[bytes] = []
    for index, message in enumerate(messages):
        if not isinstance(message, (ModelRequest, ModelResponse)):
            raise InvalidInputError(
                f"messages[{index}] is a {type(message).__name__}, not a ModelRequest or "
                "ModelResponse",
                field="messages",
            )
        try:
            encoded.append(_MESSAGE.dump_json(message))
        except (PydanticSerializationError, ValueError, TypeError) as exc:
            raise InvalidInputError(
                f"messages[{index}] cannot be serialised: {exc}", field="messages"
            ) from None
    return encoded


def decode_message(raw: object) -> ModelMessage | None:
    """The message a stored element holds, or ``None`` when the element is corrupt (pure)."""
    if isinstance(raw, (bytearray, memoryview)):
        raw = bytes(raw)
    if not isinstance(raw, (str, bytes)):
        return None
    try:
        return _MESSAGE.validate_json(raw)
    except (pydantic.ValidationError, ValueError, RecursionError):
        return None


# A dataclass carries its own pydantic configuration, so this adapter takes none.
_RECORD: pydantic.TypeAdapter[ConversationRecord] = pydantic.TypeAdapter(ConversationRecord)


def encode_record(record: ConversationRecord) -> bytes:
    """The stored form of a conversation store's record (pure).

    Raises:
        InvalidInputError: the record holds a value pydantic cannot write as JSON (bytes
            that are not UTF-8 in a deferred call's metadata, say); nothing is written.
    """
    try:
        return _RECORD.dump_json(record)
    except (PydanticSerializationError, ValueError, TypeError) as exc:
        raise InvalidInputError(f"the record cannot be serialised: {exc}", field="record") from None


def decode_record(raw: object) -> ConversationRecord | None:
    """The record a stored value holds, or ``None`` when the value is corrupt (pure)."""
    if isinstance(raw, (bytearray, memoryview)):
        raw = bytes(raw)
    if not isinstance(raw, (str, bytes)):
        return None
    try:
        return _RECORD.validate_json(raw)
    except (pydantic.ValidationError, ValueError, RecursionError):
        return None


__all__ = ["decode_message", "decode_record", "encode_messages", "encode_record"]
