"""The built-in extractive summariser: its arguments, and texts the store accepts."""

from __future__ import annotations

from typing import Any

import pytest

from agent_memory import InvalidInputError, MemoryItem, Scope
from agent_memory.store.summarizers import extractive_summarizer
from tests.store.conftest import StoreEnv


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"max_sentences": 0}, "max_sentences"),
        ({"max_sentences": -1}, "max_sentences"),
        ({"max_sentences": "3"}, "max_sentences"),
        ({"max_sentences": True}, "max_sentences"),
        ({"max_bytes": 10}, "max_bytes"),
        ({"max_bytes": 1000.0}, "max_bytes"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs: dict[str, Any], field: str) -> None:
    """Before, any value was taken: 0 gave an empty summary and -1 dropped the best
    sentence (a slice bound), a string failed only inside consolidate."""
    with pytest.raises(InvalidInputError) as refused:
        extractive_summarizer(**kwargs)
    assert refused.value.field == field


async def test_its_summary_of_long_memories_fits_the_store(env: StoreEnv) -> None:
    """Sentences of long memories together exceeded max_content_bytes, so consolidate
    with the library's own summariser raised instead of summarising; its text now stays
    within max_bytes (default: the store's default max_content_bytes), keeping the best
    sentences that fit, and the run replaces its sources."""
    store = env.make()
    scope = Scope(agent_id="a")
    for i in range(4):
        await store.remember(f"deploy step {i} " * 1300 + ".", scope=scope)  # ~19 KB each
    result = await store.consolidate(mode="summary", scope=scope, summarize=extractive_summarizer())
    assert len(result.created) == 1 and len(result.deleted) == 4
    (summary,) = (await store.list(scope=scope)).items
    assert summary.source == "summary" and summary.content.count("deploy step") == 1300


def test_a_best_sentence_too_long_alone_is_cut_to_fit() -> None:
    summarize = extractive_summarizer(max_bytes=4096)
    sentence = "déploiement " * 1000 + "."
    summary = summarize([_item(sentence)])
    prefix, body = summary.split(": ", 1)
    assert 4090 < len(summary.encode()) <= 4096  # cut at a character boundary
    assert prefix == "Summary of 1 memories (1970-01-01)" and sentence.startswith(body)


def _item(content: str) -> MemoryItem:
    return MemoryItem(
        id="m", content=content, importance=0.5, tags=(), scope=Scope(), created_at=0,
        last_accessed_at=0, access_count=0,
    )  # fmt: skip
