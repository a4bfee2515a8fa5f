"""Which request parameters make up an LLM cache key, and how they are normalised.

The key is ``{name}:llm:`` + the SHA-256 of the canonical JSON (see
:mod:`agent_memory.cache.keys`) of the request parameters, minus the parameters that
cannot change the output. **Every other parameter is part of the key**, including
unknown ones, so two requests that differ in anything that may change the answer
(``model``, ``messages``, ``system``, ``tools``, ``tool_choice``, ``temperature``,
``top_p``, ``top_k``, ``n``, ``presence_penalty``, ``frequency_penalty``,
``logit_bias``, ``logprobs``, ``max_tokens``, ``max_completion_tokens``, ``seed``,
``stop``, ``response_format``, ``reasoning_effort``, ``parallel_tool_calls``,
``extra_body``, ...) never share an entry.

Excluded (they change delivery, accounting or routing, not the answer):
:data:`EXCLUDED_PARAMS` = ``stream``, ``stream_options``, ``timeout``,
``request_timeout``, ``max_retries``, ``user``, ``metadata``, ``store``,
``extra_headers``, ``extra_query``, ``request_id``, ``idempotency_key``,
``safety_identifier``, ``prompt_cache_key``, ``prompt_cache_retention``, ``api_key``,
``service_tier``, ``background``.

Normalisation (each keeps the meaning of the request):

* a parameter set to ``None`` is the same as an absent one (both mean "default");
* for the model families whose documented defaults are ``temperature=1`` and
  ``top_p=1`` (:data:`UNIT_SAMPLING_DEFAULTS`: OpenAI's and Anthropic's), an absent
  ``temperature`` / ``top_p`` is keyed as 1, as the BetterDB agent-cache keys every
  request; for other models an explicit 1 is *not* the same as absent (their defaults
  differ: a shared entry could serve the wrong answer);
* integral floats equal the integer (``temperature=1.0`` and ``1``);
* a message whose ``content`` is a list of exactly one ``{"type": "text", "text": s}``
  block (with no other keys) is keyed as ``content = s``; the same holds for a top-level
  ``system`` parameter (Anthropic);
* object key order never matters; list order always does (messages, tools, stop).

Compatibility with BetterDB agent-cache (TypeScript, and its Python port): for a request
made only of the parameters it keys (``model``, ``messages``, ``temperature``, ``top_p``,
``max_tokens``, ``tool_choice``, ``seed``, ``stop``, ``response_format``,
``reasoning_effort``, ``tools``), the key is byte for byte the one it computes, so either
side hits what the other stored (the three camelCase names it hashes are used here too).
Where the rules disagree ours stays, being the correct one: a request with any other
output-affecting parameter keeps it in the key (agent-cache ignores it, so two such
requests collide there), tools keep their order (agent-cache sorts them by name), and
``prompt_cache_key`` stays out (it never changes the answer; agent-cache hashes it), and
a content of one plain text block is keyed as its text (the model reads the two forms
alike; agent-cache keys the block as written). Those requests simply do not hit across
the two libraries. Numbers and key order are written as JavaScript writes them (see
:func:`agent_memory.cache.keys.canonical_json`), so ``1e-7`` hashes alike on both sides.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agent_memory.cache.keys import digest
from agent_memory.errors import InvalidInputError

EXCLUDED_PARAMS: frozenset[str] = frozenset(
    {
        "stream",
        "stream_options",
        "timeout",
        "request_timeout",
        "max_retries",
        "user",
        "metadata",
        "store",
        "extra_headers",
        "extra_query",
        "request_id",
        "idempotency_key",
        "safety_identifier",
        "prompt_cache_key",
        "prompt_cache_retention",
        "api_key",
        "service_tier",
        "background",
    }
)


#: Model name prefixes whose documented sampling defaults are temperature 1, top_p 1.
UNIT_SAMPLING_DEFAULTS: tuple[str, ...] = ("gpt-", "chatgpt-", "o1", "o3", "o4", "claude-")

# Parameters BetterDB agent-cache hashes under another name (camelCase).
_THEIR_NAMES = {
    "tool_choice": "toolChoice",
    "response_format": "responseFormat",
    "reasoning_effort": "reasoningEffort",
}


def _single_text(content: Any) -> Any:
    """``[{"type": "text", "text": s}]`` -> ``s``; anything else unchanged."""
    if isinstance(content, (list, tuple)) and len(content) == 1:
        block = content[0]
        if (
            isinstance(block, Mapping)
            and set(block) == {"type", "text"}
            and block["type"] == "text"
            and isinstance(block["text"], str)
        ):
            return block["text"]
    return content


def _message(message: Any) -> Any:
    if isinstance(message, Mapping) and "content" in message:
        return {**message, "content": _single_text(message["content"])}
    return message


def model_of(params: Mapping[str, Any]) -> str:
    """The ``model`` parameter.

    Raises:
        InvalidInputError: ``params`` is not a mapping or has no non-empty string model.
    """
    if not isinstance(params, Mapping):
        raise InvalidInputError(
            f"params must be a mapping of request parameters, got {type(params).__name__}",
            field="params",
        )
    model = params.get("model")
    if not isinstance(model, str) or not model:
        raise InvalidInputError("params needs a non-empty string 'model'", field="model")
    return model


def key_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The normalised parameters that make up the key.

    Raises:
        InvalidInputError: no model, a non-string parameter name, or a value that is not
            JSON (see :func:`agent_memory.cache.keys.canonical_json`).
    """
    model = model_of(params)
    out: dict[str, Any] = {}
    for name, value in params.items():
        if not isinstance(name, str):
            raise InvalidInputError(f"parameter names must be strings, got {name!r}")
        if name in EXCLUDED_PARAMS or value is None:
            continue
        if name == "messages" and isinstance(value, (list, tuple)):
            out[name] = [_message(m) for m in value]
        elif name == "system":
            out[name] = _single_text(value)
        else:
            out[name] = value
    for ours, theirs in _THEIR_NAMES.items():
        if ours in out and params.get(theirs) is None:  # None: absent, as everywhere
            out[theirs] = out.pop(ours)
    if model.startswith(UNIT_SAMPLING_DEFAULTS):
        out.setdefault("temperature", 1)
        out.setdefault("top_p", 1)
    return out


def request_digest(params: Mapping[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON of :func:`key_params`.

    Raises:
        InvalidInputError: see :func:`key_params`.
    """
    return digest(key_params(params), field="params")
