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

* a parameter set to ``None`` is the same as an absent one (both mean "default"); an
  explicit default value (``temperature=1``) is *not* the same as an absent one;
* integral floats equal the integer (``temperature=1.0`` and ``1``);
* a message whose ``content`` is a list of exactly one ``{"type": "text", "text": s}``
  block (with no other keys) is keyed as ``content = s``; the same holds for a top-level
  ``system`` parameter (Anthropic);
* object key order never matters; list order always does (messages, tools, stop).
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
    model_of(params)
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
    return out


def request_digest(params: Mapping[str, Any]) -> str:
    """SHA-256 hex of the canonical JSON of :func:`key_params`.

    Raises:
        InvalidInputError: see :func:`key_params`.
    """
    return digest(key_params(params), field="params")
