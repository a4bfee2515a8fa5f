"""The rule that keeps apart the keys of every component, whatever names users give
(pure).

Every key of a component named ``n`` starts with ``n:`` and a segment of the component
(``mem``, ``session``, ``llm``, ``adk``, ...), so two names can only meet when one
extends the other across a segment: all keys of a name ``a:session`` or ``a:session:b``
lie under ``a:session:``. That is harmless after a segment whose keys have a fixed
shape (a digest, a hash tag), and a collision after an *open* one (:data:`OPEN_PREFIXES`),
where a component named ``a`` keeps keys of any text a caller picks, or, after ``mem``,
where store ``a``'s search index takes in every hash. Hence :func:`check_name_apart`.
"""

from __future__ import annotations

from agent_memory.errors import InvalidInputError

OPEN_PREFIXES: dict[str, str] = {
    "mem": "the memory store's index prefix: its search index takes in every hash there",
    "session": "SessionStore's threads (also the LangChain chat history's)",
    "kv": "the LangChain byte store's values",
    "li_chat": "the LlamaIndex chat store's chats",
    "li_db": "the LlamaIndex DB chat store's chats",
    "pai_history": "the pydantic-ai message history's conversations",
    "pai_conv:entry": "the pydantic-ai conversation store's entries",
    "oai_session": "the OpenAI Agents session's sessions",
}
"""What follows ``{name}:`` in keys whose rest is any text a caller picks (thread, chat,
session, conversation or entry id, byte-store namespace and key), with whose they are;
``mem`` is the memory store's index prefix."""

TOOL_SEGMENT = "tool"
"""The tool cache's entries are ``{name}:tool:{tool}:{64 hex digits}``: a key
``a:tool:{word}:{digest}`` of any other component would be a tool entry of ``a``."""


def check_name_apart(name: str, *, hex_keys: bool) -> str:
    """``name`` (otherwise valid) when no key of a component so named can be, or lie
    under, a key another component keeps under another name (pure).

    ``hex_keys`` says whether the component has keys ``{name}:{word}:{rest}`` whose rest
    may be 64 lower-case hex digits (a digest, or an id or thread id the caller picks):
    under a name ending with ``:tool`` those are tool entries of the name before it.

    Raises:
        InvalidInputError: (field ``name``) the name holds an open prefix of
            :data:`OPEN_PREFIXES` after its first character, followed by ``:`` or at its
            end (``a:session``, ``a:mem:b``), or, with ``hex_keys``, ends with ``:tool``
            after its first character.
    """
    padded = f"{name}:"
    for prefix, owner in OPEN_PREFIXES.items():
        # at 0 the name before would be empty, which no component accepts
        at = padded.find(f":{prefix}:", 1)
        if at != -1:
            before = name[:at]
            raise InvalidInputError(
                f"name must not contain ':{prefix}' followed by ':' or at its end: its "
                f"keys would lie under '{before}:{prefix}:', {owner} of the name "
                f"{before!r}; got {name!r}",
                field="name",
            )
    suffix = f":{TOOL_SEGMENT}"
    if hex_keys and name.endswith(suffix) and len(name) > len(suffix):
        raise InvalidInputError(
            f"name must not end with '{suffix}': its keys would be tool entries of the "
            f"tool cache named {name[: -len(suffix)]!r}; got {name!r}",
            field="name",
        )
    return name


__all__ = ["OPEN_PREFIXES", "TOOL_SEGMENT", "check_name_apart"]
