"""Detect which search module (if any) a server runs and what its dialect allows.

``MODULE LIST`` names both RediSearch and valkey-search ``search``, with different version
encodings (RediSearch ``major*10000+minor*100+patch``, valkey-search from 1.1
``(major<<16)|(minor<<8)|patch``, valkey-search 1.0.x ``10000`` whatever the patch), so
the family is decided by a probe: RediSearch answers ``FT.CONFIG GET TIMEOUT``,
valkey-search does not know the command.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory.core.effects import Operation, command, execute_batch
from agent_memory.core.replies import integer, pairs, text
from agent_memory.errors import AgentMemoryError


@dataclass(frozen=True, slots=True)
class Dialect:
    """What the server's search module accepts.

    Attributes:
        family: ``"valkey-search"``, ``"redisearch"`` or ``"none"``.
        version: ``(major, minor, patch)``, ``(0, 0, 0)`` when there is no module.
        pure_filter_queries: queries without ``=>[KNN ...]`` are accepted.
        tag_or_syntax: ``@t:{a|b}`` is a real OR.
        full_text: TEXT fields and full-text queries.
        baseline: capped to the valkey-search 1.0.2 dialect whatever the server
            accepts (``MemoryStore(..., ft_dialect="baseline")``): no feature below is
            used.
        hybrid_policy: filtered KNN queries accept ``HYBRID_POLICY`` (RediSearch >= 2.6).
        native_text: the library may keep its lexical channel in a ``TEXT`` field
            searched with BM25 (RediSearch; valkey-search's full text is not used yet).
    """

    family: str
    version: tuple[int, int, int]
    baseline: bool = False

    @property
    def has_search(self) -> bool:
        return self.family != "none"

    @property
    def pure_filter_queries(self) -> bool:
        return not self.baseline and (
            self.family == "redisearch"
            or (self.family == "valkey-search" and self.version >= (1, 1, 0))
        )

    @property
    def tag_or_syntax(self) -> bool:
        if self.baseline:
            return False
        if self.family == "redisearch":
            return True
        v = self.version
        return self.family == "valkey-search" and ((1, 0, 3) <= v < (1, 1, 0) or v >= (1, 1, 1))

    @property
    def full_text(self) -> bool:
        return not self.baseline and (
            self.family == "redisearch"
            or (self.family == "valkey-search" and self.version >= (1, 2, 0))
        )

    @property
    def hybrid_policy(self) -> bool:
        return not self.baseline and self.family == "redisearch" and self.version >= (2, 6, 0)

    @property
    def native_text(self) -> bool:
        return not self.baseline and self.family == "redisearch" and self.version >= (2, 6, 0)

    @property
    def defers_script_writes(self) -> bool:
        """valkey-search 1.0.x indexes a write made in a script or ``MULTI`` only at the
        next search of the index (or once enough such writes queue up), and until then
        holds back the reply of any client that writes the same key with a plain command
        (fixed in 1.1, valkey-search pull request 381). A server behaviour: the baseline
        cap does not change it."""
        return self.family == "valkey-search" and self.version < (1, 1, 0)

    @property
    def features(self) -> tuple[str, ...]:
        """The optional features the library uses on this server (beyond valkey-search
        1.0.2), by name: ``hybrid_policy``, ``native_text``."""
        named = (("hybrid_policy", self.hybrid_policy), ("native_text", self.native_text))
        return tuple(name for name, on in named if on)

    def capped(self) -> Dialect:
        """This dialect limited to the valkey-search 1.0.2 baseline."""
        return Dialect(self.family, self.version, baseline=True)

    def __str__(self) -> str:
        if not self.has_search:
            return "no search module"
        text = f"{self.family} {'.'.join(str(p) for p in self.version)}"
        return f"{text} (baseline dialect)" if self.baseline else text


NO_SEARCH = Dialect("none", (0, 0, 0))


def search_module_version(module_list: Any) -> int | None:
    """The raw version number of the module named ``search`` in a MODULE LIST reply."""
    if not isinstance(module_list, Sequence) or isinstance(module_list, (str, bytes)):
        return None
    for entry in module_list:
        info = pairs(entry)
        if text(info.get("name", "")).lower() in {"search", "ft"}:
            return integer(info.get("ver", 0))
    return None


def decode_version(raw: int, family: str) -> tuple[int, int, int]:
    """Decode a module version number of the given family.

    valkey-search 1.1 and later encode ``(major<<16)|(minor<<8)|patch`` (1.2.1 reports
    66049), but the 1.0 releases report ``10000``, RediSearch's decimal encoding of
    1.0.0 (seen on 1.0.2), so a number below ``1<<16`` is read as decimal.
    """
    if family == "redisearch" or raw < 1 << 16:
        return raw // 10000, (raw // 100) % 100, raw % 100
    return (raw >> 16) & 0xFF, (raw >> 8) & 0xFF, raw & 0xFF


def classify(module_list: Any, ft_list_ok: bool, ft_config_ok: bool) -> Dialect:
    """Decide the dialect from MODULE LIST and two probes (pure)."""
    raw = search_module_version(module_list)
    if raw is None and not ft_list_ok:
        return NO_SEARCH
    family = "redisearch" if ft_config_ok else "valkey-search"
    return Dialect(family, decode_version(max(raw or 0, 0), family))


def detect_dialect() -> Operation[Dialect]:
    """Operation: probe the server once (one round trip) and classify its dialect."""
    replies = yield from execute_batch(
        [
            command("MODULE", "LIST"),
            command("FT._LIST"),
            command("FT.CONFIG", "GET", "TIMEOUT"),
        ]
    )
    module_list, ft_list, ft_config = replies
    if isinstance(module_list, AgentMemoryError):
        module_list = None  # MODULE may be denied by ACLs; the probes still decide
    return classify(
        module_list,
        ft_list_ok=not isinstance(ft_list, AgentMemoryError),
        ft_config_ok=not isinstance(ft_config, AgentMemoryError),
    )
