"""A dependency-free extractive summariser for ``consolidate(mode="summary")``."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timezone

from agent_memory.errors import InvalidInputError
from agent_memory.schema.types import MemoryItem
from agent_memory.store.arguments import positive_int
from agent_memory.store.memory_store import DEFAULT_MAX_CONTENT_BYTES

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# Room for the "Summary of N memories (dates): " prefix and some text after it.
_MIN_BYTES = 256


def extractive_summarizer(
    max_sentences: int = 5, *, max_bytes: int = DEFAULT_MAX_CONTENT_BYTES
) -> Callable[[Sequence[MemoryItem]], str]:
    """A ``summarize`` callback that keeps the most central sentences.

    Each sentence is scored by how many of its words other memories of the group share
    (centrality) plus the importance of its memory; the best ``max_sentences`` are kept
    in chronological order and prefixed with the date range they cover. The text stays
    within ``max_bytes`` UTF-8 bytes (pass the store's ``max_content_bytes`` when it is
    not the default): a sentence that would overflow it is left out, and the best one
    alone is cut when even it does not fit, so the store never refuses the summary.

    Raises:
        InvalidInputError: ``max_sentences`` is not an int >= 1, or ``max_bytes`` not an
            int >= 256.
    """
    positive_int(max_sentences, "max_sentences")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < _MIN_BYTES:
        raise InvalidInputError(f"max_bytes must be an int >= {_MIN_BYTES}", field="max_bytes")

    def summarize(items: Sequence[MemoryItem]) -> str:
        sentences: list[tuple[int, int, str, float]] = []
        for position, item in enumerate(items):
            for part in _SENTENCE.split(item.content.strip()):
                if part.strip():
                    sentences.append((position, len(sentences), part.strip(), item.importance))
        document_frequency: Counter[str] = Counter()
        for _, _, text, _ in sentences:
            document_frequency.update({w.casefold() for w in _WORD.findall(text)})

        def score(entry: tuple[int, int, str, float]) -> float:
            words = {w.casefold() for w in _WORD.findall(entry[2])}
            shared = sum(document_frequency[w] - 1 for w in words) / (len(words) or 1)
            return shared + 2.0 * entry[3]

        start, end = _day(items[0].created_at), _day(items[-1].created_at)
        span = start if start == end else f"{start} to {end}"
        prefix = f"Summary of {len(items)} memories ({span}): "
        budget = max_bytes - _size(prefix)
        chosen: list[tuple[int, int, str, float]] = []
        seen: set[str] = set()
        for entry in sorted(sentences, key=lambda e: (-score(e), e[1])):
            if len(chosen) == max_sentences:
                break
            folded = entry[2].casefold()
            cost = _size(entry[2]) + (1 if chosen else 0)  # the joining space
            if folded in seen or cost > budget:
                continue
            chosen.append(entry)
            seen.add(folded)
            budget -= cost
        if not chosen and sentences:  # the best sentence alone is too long: cut it
            best = min(sentences, key=lambda e: (-score(e), e[1]))
            return prefix + _cut(best[2], budget)
        chosen.sort(key=lambda e: (e[0], e[1]))
        return prefix + " ".join(entry[2] for entry in chosen)

    return summarize


def _size(text: str) -> int:
    return len(text.encode("utf-8", "surrogatepass"))


def _cut(text: str, max_bytes: int) -> str:
    """``text`` within ``max_bytes`` UTF-8 bytes, cut at a character boundary."""
    cut = text.encode("utf-8", "surrogatepass")[:max_bytes]
    return cut.decode("utf-8", "ignore").rstrip()


def _day(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).date().isoformat()
