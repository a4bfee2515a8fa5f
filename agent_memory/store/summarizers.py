"""A dependency-free extractive summariser for ``consolidate(mode="summary")``."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timezone

from agent_memory.schema.types import MemoryItem

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def extractive_summarizer(max_sentences: int = 5) -> Callable[[Sequence[MemoryItem]], str]:
    """A ``summarize`` callback that keeps the most central sentences.

    Each sentence is scored by how many of its words other memories of the group share
    (centrality) plus the importance of its memory; the best ``max_sentences`` are kept
    in chronological order and prefixed with the date range they cover.
    """

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

        best = sorted(sentences, key=lambda e: (-score(e), e[1]))[:max_sentences]
        best.sort(key=lambda e: (e[0], e[1]))
        kept: list[str] = []
        for entry in best:
            if entry[2].casefold() not in {k.casefold() for k in kept}:
                kept.append(entry[2])
        start, end = _day(items[0].created_at), _day(items[-1].created_at)
        span = start if start == end else f"{start} to {end}"
        return f"Summary of {len(items)} memories ({span}): " + " ".join(kept)

    return summarize


def _day(epoch_ms: int) -> str:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=timezone.utc).date().isoformat()
