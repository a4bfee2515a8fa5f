"""LLM response cache: exact-match on every output-affecting request parameter.

An entry lives at ``{name}:llm:{sha256}`` (see :mod:`agent_memory.cache.llm_params` for
what is hashed and the documented list of excluded parameters) as a JSON string
``{"response", "model", "storedAt" (ms), "tokens": {"input", "output"}, "cost" (USD)}``.
A hit adds ``tokens x price`` (price table of :mod:`agent_memory.cache.prices`, looked up
when the hit happens) to ``cost_saved_micros``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agent_memory.cache._bulk import get_values, scan_and_unlink, unlink_keys
from agent_memory.cache._tier import TierCore, logger, read_entry
from agent_memory.cache.keys import check_name_for_tier, encode_json, plain, ttl_ms
from agent_memory.cache.llm_params import model_of, request_digest
from agent_memory.cache.prices import (
    ModelPrice,
    PriceTable,
    counted_micros,
    micros_of_usd,
    resolve_prices,
)
from agent_memory.cache.stats import batch_with_stats
from agent_memory.core.effects import Command, Operation, call, scan_keys
from agent_memory.core.replies import raise_first_error
from agent_memory.errors import AgentMemoryError, InvalidInputError

_FIELDS = (("llm:hits",), ("llm:misses",))
MAX_TOKENS = 10**9
"""The most tokens of one kind a completion may report (more is a mistake, refused)."""
MAX_STORED_AT_MS = 2**53
"""A stored ``storedAt`` beyond this (about 285,000 years) is damage."""

_TOKEN_SPELLINGS = {
    "input": ("input", "input_tokens", "prompt_tokens"),
    "output": ("output", "output_tokens", "completion_tokens"),
}
"""The keys a usage mapping may give each side's count under (this library's and
agent-cache's, Anthropic's and OpenAI Responses', OpenAI Chat Completions')."""


def _check_count(value: Any, label: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise InvalidInputError(
            f"token count {label} must be an integer in [0, {MAX_TOKENS}], got {value!r:.40}",
            field="tokens",
        )
    return value


def _side(tokens: Mapping[str, Any], side: str) -> int:
    """One side's count: from whichever of its spellings the mapping gives (``None``
    counts as not given); 0 when none. Two spellings giving different counts are
    refused: which one the provider meant cannot be told."""
    given = {
        k: _check_count(tokens[k], k) for k in _TOKEN_SPELLINGS[side] if tokens.get(k) is not None
    }
    if len(set(given.values())) > 1:
        listed = ", ".join(f"{k}={v}" for k, v in given.items())
        raise InvalidInputError(
            f"tokens gives the {side} count twice, and differently ({listed})", field="tokens"
        )
    return next(iter(given.values()), 0)


@dataclass(frozen=True, slots=True)
class TokenUsage:
    """Tokens of one completion.

    Raises:
        InvalidInputError: a count is negative, not an integer or over
            :data:`MAX_TOKENS`.
    """

    input: int = 0
    output: int = 0

    def __post_init__(self) -> None:
        _check_count(self.input, "input")
        _check_count(self.output, "output")

    @classmethod
    def parse(cls, tokens: TokenUsage | Mapping[str, Any] | None) -> TokenUsage | None:
        """Accept a TokenUsage or a mapping giving the input count as ``input``,
        ``input_tokens`` (Anthropic, OpenAI Responses) or ``prompt_tokens`` (OpenAI Chat
        Completions) and the output count as ``output``, ``output_tokens`` or
        ``completion_tokens``. Each side is read from whichever of its spellings is
        given, whatever the other side uses (``{"input": 3, "output_tokens": 4}`` is 3
        and 4); a side given under none (or as ``None``) is 0. A side given under two
        spellings must give the same count under both.

        Raises:
            InvalidInputError: none of those keys, bad counts, or one side given twice
                with different counts.
        """
        if tokens is None or isinstance(tokens, TokenUsage):
            return tokens
        if isinstance(tokens, Mapping) and any(
            k in tokens for spellings in _TOKEN_SPELLINGS.values() for k in spellings
        ):
            return cls(_side(tokens, "input"), _side(tokens, "output"))
        raise InvalidInputError(
            "tokens must be a TokenUsage or a mapping with input/output token counts",
            field="tokens",
        )


@dataclass(frozen=True, slots=True)
class LlmCacheResult:
    """Outcome of :meth:`LlmCache.check`.

    Attributes:
        hit: an entry was found.
        response: the stored response (``None`` on a miss).
        key: the entry's key (set on hits and misses).
        model: the model of the request.
        tokens: token usage stored with the entry, if any.
        cost_saved_micros: what this hit saved, in micro-dollars (0 on a miss or when
            the model has no price).
        stored_at: when the entry was stored (seconds since the epoch), if known.
    """

    hit: bool
    response: Any
    key: str
    model: str
    tokens: TokenUsage | None = None
    cost_saved_micros: int = 0
    stored_at: float | None = None


class LlmCore:
    """The operations of the LLM cache (pure generators; no I/O)."""

    def __init__(
        self,
        name: str,
        ttl: float | None,
        prices: PriceTable | Mapping[str, ModelPrice | Mapping[str, Any]] | None,
        clock: Callable[[], float],
    ) -> None:
        self.tier = TierCore(name)
        check_name_for_tier(self.tier.layout.name, "llm")
        self.ttl_ms = ttl_ms(ttl)
        self.prices = resolve_prices(prices)
        if not callable(clock):
            raise InvalidInputError("clock must be callable", field="clock")
        self.clock = clock

    def _cost(self, model: str, tokens: TokenUsage | None, stored_cost: Any) -> int:
        if tokens is None:
            return 0
        price = self.prices.lookup(model)
        if price is not None:
            return price.cost_micros(tokens.input, tokens.output)
        return micros_of_usd(stored_cost) or 0

    def check(self, params: Mapping[str, Any]) -> Operation[LlmCacheResult]:
        model = model_of(params)
        key = self.tier.layout.llm(request_digest(params))
        raw, counted = yield from self.tier.counted_get(key, *_FIELDS, priced=True)
        entry = read_entry(self.tier, key, raw)
        if entry is None:
            self.tier.settle(counted, False, _FIELDS)
            return LlmCacheResult(False, None, key, model)
        tokens = self._tokens(key, entry)
        stored_micros = entry.get("costMicros")
        saved = counted_micros(stored_micros)  # priced when stored: what the script counts
        if saved is None:
            if stored_micros is not None:
                self.tier.unreadable(f"the cost of {key}", f"not a cost: {stored_micros!r:.40}")
            saved = self._cost(str(entry.get("model") or model), tokens, entry.get("cost"))
        self.tier.settle(counted, True, _FIELDS, saved)
        stored_at = self._stored_at(key, entry.get("storedAt"))
        return LlmCacheResult(True, entry["response"], key, model, tokens, saved, stored_at)

    def _tokens(self, key: str, entry: Mapping[str, Any]) -> TokenUsage | None:
        try:
            return TokenUsage.parse(entry.get("tokens"))
        except InvalidInputError as exc:
            self.tier.unreadable(f"the token usage of {key}", str(exc))
            return None

    def _stored_at(self, key: str, stored: Any) -> float | None:
        if stored is None:
            return None
        number = not isinstance(stored, bool) and isinstance(stored, (int, float))
        if number and 0 <= stored <= MAX_STORED_AT_MS:
            return float(stored / 1000)
        self.tier.unreadable(f"the storedAt of {key}", f"not a time: {stored!r:.40}")
        return None

    def store(
        self,
        params: Mapping[str, Any],
        response: Any,
        tokens: TokenUsage | Mapping[str, Any] | None,
        ttl: float | None,
    ) -> Operation[str]:
        model = model_of(params)
        key = self.tier.layout.llm(request_digest(params))
        usage = TokenUsage.parse(tokens)
        expiry = ttl_ms(ttl) if ttl is not None else self.ttl_ms
        entry: dict[str, Any] = {
            "response": plain(response, "response"),
            "model": model,
            "storedAt": round(self.clock() * 1000),
        }
        if usage is not None:
            entry["tokens"] = {"input": usage.input, "output": usage.output}
            price = self.prices.lookup(model)
            if price is not None:
                micros = price.cost_micros(usage.input, usage.output)
                entry["cost"] = micros / 1_000_000
                entry["costMicros"] = micros
        value = encode_json(entry)
        args: tuple[Any, ...] = ("SET", key, value)
        if expiry is not None:
            args += ("PX", expiry)
        got = yield from batch_with_stats(self.tier.layout, self.tier.buffer, [Command(args)])
        raise_first_error(got)
        self.tier.note_stored(len(value))
        return key

    def invalidate_by_model(self, model: str) -> Operation[int]:
        if not isinstance(model, str) or not model:
            raise InvalidInputError("model must be a non-empty string", field="model")
        keys = yield from scan_keys(self.tier.layout.llm_pattern())
        values = yield from get_values(keys)
        doomed = []
        for key, raw in zip(keys, values, strict=True):
            if isinstance(raw, AgentMemoryError):  # not a string: another writer's key
                self.tier.unreadable(key, f"unreadable: {raw}")
                continue
            entry = read_entry(self.tier, key, raw)  # an unreadable one names no model
            if entry is not None and entry.get("model") == model:
                doomed.append(key)
        removed = yield from unlink_keys(doomed)
        return removed

    def clear(self) -> Operation[int]:
        removed = yield from scan_and_unlink(self.tier.layout.llm_pattern())
        return removed

    def cached_call(
        self,
        fn: Callable[..., Any],
        params: dict[str, Any],
        ttl: float | None,
        usage: Callable[[Any], TokenUsage | Mapping[str, Any] | None] | None,
    ) -> Operation[Any]:
        if params.get("stream"):
            response = yield from call(lambda: fn(**params), what="completion function")
            return response
        found = yield from self.check(params)
        if found.hit:
            return found.response
        response = yield from call(lambda: fn(**params), what="completion function")
        tokens = yield from self._usage(response, usage)
        try:
            yield from self.store(params, response, tokens, ttl)
        except AgentMemoryError as exc:  # logged and counted; the paid-for response is kept
            logger.warning(
                "cache %s: the response could not be stored (%s: %s); it is returned uncached",
                self.tier.layout.name,
                type(exc).__name__,
                exc,
            )
            self.tier.buffer.note("store_failures")
        return response

    def _usage(
        self,
        response: Any,
        usage: Callable[[Any], TokenUsage | Mapping[str, Any] | None] | None,
    ) -> Operation[TokenUsage | None]:
        """The token usage of a paid-for response: ``usage(response)`` (called off the
        event loop, awaited when async), else the response's own ``usage`` mapping. A
        ``usage`` that fails or returns ``None``, or a response's own ``usage`` that is
        not a valid usage mapping, is logged and counted (``usage_failures``) and the
        response is stored without one, never lost."""
        if usage is None:
            own = response.get("usage") if isinstance(response, Mapping) else None
            if own is None:
                return None  # a response that reports no usage: nothing to count
            try:
                return TokenUsage.parse(own)
            except InvalidInputError as exc:
                self._usage_failed(f"the response's usage is unreadable ({exc})")
                return None
        try:
            found = yield from call(usage, response, what="usage function")
            if found is None:
                self._usage_failed("the usage function returned None")
                return None
            return TokenUsage.parse(found)
        except Exception as exc:  # noqa: BLE001 - logged and counted; the response is kept
            self._usage_failed(f"the usage function failed ({type(exc).__name__}: {exc})")
            return None

    def _usage_failed(self, why: str) -> None:
        logger.warning(
            "cache %s: %s; response stored without token usage", self.tier.layout.name, why
        )
        self.tier.buffer.note("usage_failures")


def _check_args(args: tuple[Any, ...]) -> None:
    if args:
        raise InvalidInputError(
            "a cached completion function takes keyword arguments only (model=..., messages=...)",
            field="args",
        )
