"""Operations of the tool result cache (pure generators; the facades are in ``tool.py``).

An entry lives at ``{name}:tool:{tool}:{sha256}`` (tool segment: see
:mod:`agent_memory.cache.keys`) where the digest covers ``[tool, args]`` in canonical
JSON, so argument order never matters. The value is a JSON string ``{"response",
"toolName", "args", "storedAt" (ms)}``.

Per-tool TTL policies live in the hash ``{name}:__tool_policies`` (field: tool name,
value ``{"ttl": seconds}``). Each tier instance keeps a copy and re-reads the hash when
it is older than ``policy_refresh`` seconds, just before a ``store`` that needs it (one
without a ``ttl``); a ``check`` never reads the policies. TTL of a stored entry: the ``ttl`` argument, else the tool's
policy, else the tier default, else none.

``tool_effectiveness()`` recommends, per tool, from its hit rate over its lookups:

* fewer than ``MIN_SAMPLES`` (10) lookups: ``insufficient_data`` (TTL unchanged);
* hit rate >= 0.8: ``increase_ttl`` to twice the TTL (at most one day) when the TTL is
  under a day, else ``optimal``;
* 0.4 <= hit rate < 0.8: ``optimal``;
* hit rate < 0.4: ``decrease_ttl_or_disable`` with half the TTL (at least 60 s), or one
  hour when entries currently never expire.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agent_memory.cache._bulk import scan_and_unlink
from agent_memory.cache._tier import TierCore, read_entry
from agent_memory.cache.keys import (
    check_name_for_tier,
    check_text,
    digest,
    encode_json,
    plain,
    tool_segment,
    ttl_ms,
)
from agent_memory.cache.stats import batch_with_stats, parse_stats, unreadable_field
from agent_memory.core import replies
from agent_memory.core.checks import check_ttl_seconds
from agent_memory.core.effects import Command, Operation, execute_batch
from agent_memory.core.replies import raise_first_error
from agent_memory.errors import AgentMemoryError, InvalidInputError, WrongTypeError

MIN_SAMPLES = 10
MAX_SUGGESTED_TTL = 86_400.0
MIN_SUGGESTED_TTL = 60.0
DEFAULT_SUGGESTED_TTL = 3_600.0


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """Caching policy of one tool.

    Attributes:
        ttl: lifetime of the tool's entries in seconds.
    """

    ttl: float


@dataclass(frozen=True, slots=True)
class ToolCacheResult:
    """Outcome of :meth:`ToolCache.check`.

    Attributes:
        hit: an entry was found.
        result: the stored tool result (``None`` on a miss).
        key: the entry's key.
        tool: the tool name.
    """

    hit: bool
    result: Any
    key: str
    tool: str


@dataclass(frozen=True, slots=True)
class ToolEffectiveness:
    """How well the cache serves one tool, with a TTL recommendation (rule: see
    :mod:`agent_memory.cache.tool_core`).

    Attributes:
        tool: the tool name.
        hits, misses: lookups so far.
        hit_rate: hits / lookups.
        ttl: the TTL its entries get now (policy, else tier default; None = no expiry).
        recommendation: ``insufficient_data``, ``increase_ttl``, ``optimal`` or
            ``decrease_ttl_or_disable``.
        suggested_ttl: the TTL the recommendation suggests.
    """

    tool: str
    hits: int
    misses: int
    hit_rate: float
    ttl: float | None
    recommendation: str
    suggested_ttl: float | None


def recommend(hits: int, misses: int, ttl: float | None) -> tuple[str, float | None]:
    """The recommendation and suggested TTL for one tool (pure)."""
    lookups = hits + misses
    if lookups < MIN_SAMPLES:
        return "insufficient_data", ttl
    rate = hits / lookups
    if rate >= 0.8:
        if ttl is not None and ttl < MAX_SUGGESTED_TTL:
            return "increase_ttl", min(ttl * 2, MAX_SUGGESTED_TTL)
        return "optimal", ttl
    if rate >= 0.4:
        return "optimal", ttl
    if ttl is None:
        return "decrease_ttl_or_disable", DEFAULT_SUGGESTED_TTL
    return "decrease_ttl_or_disable", max(ttl / 2, MIN_SUGGESTED_TTL)


def _parse_policies(reply: Any, unreadable: Callable[[str, str], None]) -> dict[str, ToolPolicy]:
    """The tools' policies of an ``HGETALL`` of the policies hash; one that is not a JSON
    object with a ``ttl`` a tier accepts (positive, finite, at most ten years) is left out and reported to ``unreadable(tool, why)``."""
    policies: dict[str, ToolPolicy] = {}
    for raw_tool, raw in replies.raw_pairs(reply):
        tool = replies.lenient_text(raw_tool)
        if tool is None:
            unreadable(repr(raw_tool), "its name is not UTF-8")
            continue
        try:
            ttl = json.loads(replies.text(raw)).get("ttl")
        except (ValueError, AttributeError, RecursionError, AgentMemoryError) as exc:
            unreadable(tool, f"not a JSON object: {exc}")
            continue
        try:
            seconds = check_ttl_seconds(ttl)
        except InvalidInputError:
            seconds = None
        if seconds is None:
            unreadable(tool, f"its ttl is not a positive number of at most ten years: {ttl!r}")
        else:
            policies[tool] = ToolPolicy(seconds)
    return policies


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _policy_json(ttl: float) -> str:
    return json.dumps({"ttl": plain(float(ttl), "ttl")})


class ToolCore:
    """The operations of the tool cache (no I/O)."""

    def __init__(
        self,
        name: str,
        ttl: float | None,
        policy_refresh: float,
        clock: Callable[[], float],
    ) -> None:
        self.tier = TierCore(name)
        check_name_for_tier(self.tier.layout.name, "tool")
        self.ttl = ttl
        self.ttl_ms = ttl_ms(ttl)
        if isinstance(policy_refresh, bool) or not isinstance(policy_refresh, (int, float)):
            raise InvalidInputError(
                "policy_refresh must be a number of seconds", field="policy_refresh"
            )
        if not policy_refresh >= 0:
            raise InvalidInputError("policy_refresh must be >= 0", field="policy_refresh")
        self.policy_refresh = float(policy_refresh)
        if not callable(clock):
            raise InvalidInputError("clock must be callable", field="clock")
        self.clock = clock
        self.policies: dict[str, ToolPolicy] = {}
        self.loaded_at: float | None = None

    def _stale(self) -> bool:
        return self.loaded_at is None or self.clock() - self.loaded_at >= self.policy_refresh

    def _unreadable_policy(self, tool: str, why: str) -> None:
        self.tier.unreadable(f"the policy of tool {tool!r}", why)

    def _loaded(self, reply: Any) -> None:
        if isinstance(reply, BaseException):
            # The policies stay as they were and are read again by the next call.
            self.tier.unreadable(self.tier.layout.tool_policies, str(reply))
            return
        self.policies = _parse_policies(reply, self._unreadable_policy)
        self.loaded_at = self.clock()

    def _key(self, tool: str, args: Any) -> str:
        """``{name}:tool:{tool}:{sha256 of the canonical JSON of args}``: BetterDB
        agent-cache's key, so both libraries share entries. A tool name that is not plain
        gets a digest segment (glob- and cluster-safe) and the name joins the hashed
        value, so no two tools can meet (those entries are not shared)."""
        check_text(tool, field="tool")
        value = {} if args is None else args
        hashed = value if tool_segment(tool) == tool else [tool, value]
        return self.tier.layout.tool(tool, digest(hashed, field="args"))

    def check(self, tool: str, args: Any) -> Operation[ToolCacheResult]:
        key = self._key(tool, args)
        fields = (("tool:hits", f"tool:{tool}:hits"), ("tool:misses", f"tool:{tool}:misses"))
        raw, counted = yield from self.tier.counted_get(key, *fields)
        entry = read_entry(self.tier, key, raw)
        self.tier.settle(counted, entry is not None, fields)
        if entry is None:
            return ToolCacheResult(False, None, key, tool)
        # Our entries keep the JSON value; agent-cache's hold the response text only.
        return ToolCacheResult(True, entry.get("value", entry["response"]), key, tool)

    def _refresh_policies(self) -> Operation[None]:
        if self._stale():
            (reply,) = yield from execute_batch(
                [Command(("HGETALL", self.tier.layout.tool_policies))]
            )
            self._loaded(reply)

    def store(self, tool: str, args: Any, result: Any, ttl: float | None) -> Operation[str]:
        key = self._key(tool, args)
        expiry = ttl_ms(ttl)
        value = plain(result, "result")
        entry: dict[str, Any] = {
            # agent-cache reads ``response`` as text: a JSON value goes there as its JSON
            # text, and as itself in ``value`` for this library.
            "response": value if isinstance(value, str) else _compact(value),
            "toolName": tool,
            "args": plain(args, "args"),
            "storedAt": round(self.clock() * 1000),
        }
        if not isinstance(value, str):
            entry["value"] = value
        stored = encode_json(entry)
        if expiry is None:
            yield from self._refresh_policies()
            policy = self.policies.get(tool)
            expiry = ttl_ms(policy.ttl) if policy is not None else self.ttl_ms
        args_: tuple[Any, ...] = ("SET", key, stored)
        if expiry is not None:
            args_ += ("PX", expiry)
        got = yield from batch_with_stats(self.tier.layout, self.tier.buffer, [Command(args_)])
        raise_first_error(got)
        self.tier.note_stored(len(stored))
        return key

    def set_policy(self, tool: str, ttl: float) -> Operation[None]:
        check_text(tool, field="tool")
        ttl_ms(ttl)
        command = Command(("HSET", self.tier.layout.tool_policies, tool, _policy_json(ttl)))
        got = yield from batch_with_stats(self.tier.layout, self.tier.buffer, [command])
        raise_first_error(got)
        self.policies[tool] = ToolPolicy(float(ttl))

    def get_policy(self, tool: str) -> Operation[ToolPolicy | None]:
        check_text(tool, field="tool")
        command = Command(("HGET", self.tier.layout.tool_policies, tool))
        (raw,) = yield from batch_with_stats(self.tier.layout, self.tier.buffer, [command])
        if isinstance(raw, WrongTypeError):  # another writer's key: read as holding none
            self.tier.unreadable(self.tier.layout.tool_policies, str(raw))
            raw = None
        raise_first_error([raw])
        policy = (
            _parse_policies({tool: raw}, self._unreadable_policy).get(tool)
            if raw is not None
            else None
        )
        if policy is None:
            self.policies.pop(tool, None)
        else:
            self.policies[tool] = policy
        return policy

    def delete_policy(self, tool: str) -> Operation[bool]:
        check_text(tool, field="tool")
        command = Command(("HDEL", self.tier.layout.tool_policies, tool))
        (removed,) = yield from batch_with_stats(self.tier.layout, self.tier.buffer, [command])
        raise_first_error([removed])
        self.policies.pop(tool, None)
        return replies.integer(removed) > 0

    def invalidate(self, tool: str, args: Any) -> Operation[bool]:
        key = self._key(tool, args)
        got = yield from batch_with_stats(
            self.tier.layout, self.tier.buffer, [Command(("UNLINK", key))]
        )
        raise_first_error(got)
        return replies.integer(got[0]) > 0

    def invalidate_by_tool(self, tool: str) -> Operation[int]:
        check_text(tool, field="tool")
        removed = yield from scan_and_unlink(self.tier.layout.tool_pattern(tool))
        return removed

    def tool_effectiveness(self) -> Operation[list[ToolEffectiveness]]:
        layout = self.tier.layout
        stats_reply, policies_reply = yield from batch_with_stats(
            layout,
            self.tier.buffer,
            [Command(("HGETALL", layout.stats)), Command(("HGETALL", layout.tool_policies))],
            counters_first=True,
        )
        raise_first_error([stats_reply])
        if not isinstance(policies_reply, WrongTypeError):  # another type: _loaded reports it
            raise_first_error([policies_reply])
        self._loaded(policies_reply)
        stats = parse_stats(
            stats_reply, unreadable=unreadable_field(self.tier.layout, self.tier.buffer)
        )
        counts = {t.tool: (t.hits, t.misses) for t in stats.tools}
        for tool in self.policies:
            counts.setdefault(tool, (0, 0))
        entries = []
        for tool, (hits, misses) in counts.items():
            policy = self.policies.get(tool)
            ttl = policy.ttl if policy is not None else self.ttl
            recommendation, suggested = recommend(hits, misses, ttl)
            rate = hits / (hits + misses) if hits + misses else 0.0
            entries.append(
                ToolEffectiveness(tool, hits, misses, rate, ttl, recommendation, suggested)
            )
        entries.sort(key=lambda e: (-(e.hits + e.misses), e.tool))
        return entries
