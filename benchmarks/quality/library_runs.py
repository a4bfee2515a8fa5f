"""Part 1: the LoCoMo turns stored and recalled through the library on a real server.

One store per conversation; each session's turns are written with ``remember_many`` while
the injected clock reads that session's date; questions are asked with the clock one hour
after the last turn, ``k=10`` and ``reinforce=False`` (reinforcement would move
``last_accessed_at`` and change later recalls). Every scenario also asks the off-topic
questions (:mod:`benchmarks.quality.offtopic`) of each conversation and reports how many
memories it admits per question. The store gets the cached MiniLM vectors
through :class:`CachedEmbedder`, so the numbers equal a fresh MiniLM run.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agent_memory import MemoryInput, RecallWeights, Scope, SyncMemoryStore
from benchmarks.quality.data import Conversation
from benchmarks.quality.embedcache import CachedEmbedder, embed_cached
from benchmarks.quality.metrics import Outcome, first_rank, summarize
from benchmarks.quality.offtopic import QUESTIONS as OFF_TOPIC

K = 10


@dataclass(frozen=True, slots=True)
class Scenario:
    key: str
    label: str
    weights: RecallWeights | None  # None: the store's default
    threshold: float | None  # None: the store's default (the embedder's recommendation)


SCENARIOS = (
    Scenario("cosine", "(a) cosine only (lexical=0; sim=1, rec=0, imp=0; threshold 2.0)",
             RecallWeights(1.0, 0.0, 0.0, lexical=0.0), 2.0),
    Scenario("lexical", "(l) lexical only (library BM25 over the hybrid pool: lexical=1; "
             "sim=1, rec=0, imp=0; threshold 2.0)", RecallWeights(1.0, 0.0, 0.0, lexical=1.0), 2.0),
    Scenario("default", "(b) DEFAULT: hybrid, 0.75/0.10/0.15, 7 d half-life, default threshold "
             "(lexical matches pass the gate with half the query's idf mass)", None, None),
    Scenario("default_nogate", "(b') default, threshold 2.0 (no gate)", None, 2.0),
    Scenario("betterdb", "(c) previous default: BetterDB formula (0.6/0.25/0.15, lexical=0, "
             "default threshold)", RecallWeights(0.6, 0.25, 0.15, lexical=0.0), None),
)  # fmt: skip


class _Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def run_library(
    url: str,
    convs: Sequence[Conversation],
    embedder: Any,
    *,
    backend: str = "auto",
    prefix: str = "locomo",
    ft_dialect: str = "auto",
) -> dict[str, Any]:
    """Store every turn, recall every question under each scenario; metrics + timings."""
    ranks: dict[str, list[Outcome]] = {s.key: [] for s in SCENARIOS}
    admitted: dict[str, list[int]] = {s.key: [] for s in SCENARIOS}
    ranks.update({key: [] for key in LEARNING_KEYS})
    timing = {"remember_s": 0.0, "recall_s": 0.0, "recalls": 0, "memories": 0}
    backend_name = "?"
    for conv in convs:
        texts = [t.content() for t in conv.turns] + [q.text for q in conv.questions]
        texts += [q for q in OFF_TOPIC if q not in set(texts)]
        matrix = embed_cached(embedder, texts)
        cached = CachedEmbedder(embedder, texts, matrix)
        clock = _Clock()
        store = SyncMemoryStore.from_url(
            url, name=f"{prefix}_{conv.id}", embed=cached, embed_many=cached.embed_many,
            clock=clock, backend=backend, ft_dialect=ft_dialect,
        )  # fmt: skip
        try:
            backend_name = store.ensure_index().backend
            start = time.perf_counter()
            for session in sorted(conv.session_times):
                clock.now = conv.session_times[session]
                batch = [
                    MemoryInput(t.content(), tags=[t.speaker], source=t.dia_id)
                    for t in conv.turns
                    if t.session == session
                ]
                store.remember_many(batch)
                timing["memories"] += len(batch)
            timing["remember_s"] += time.perf_counter() - start
            clock.now = conv.end_time
            start = time.perf_counter()
            for q in conv.questions:
                for s in SCENARIOS:
                    hits = store.recall(
                        q.text, k=K, weights=s.weights, threshold=s.threshold, reinforce=False
                    )
                    ranked = [h.item.source or "" for h in hits]
                    ranks[s.key].append(Outcome(q.category, first_rank(ranked, q.evidence)))
                    timing["recalls"] += 1
            timing["recall_s"] += time.perf_counter() - start
            for question in OFF_TOPIC:
                for s in SCENARIOS:
                    hits = store.recall(
                        question, k=K, weights=s.weights, threshold=s.threshold, reinforce=False
                    )
                    admitted[s.key].append(len(hits))
            _learning_run(url, conv, cached, clock, backend, prefix, store, ranks, ft_dialect)
            store.forget_by_scope(Scope())  # leave the server as we found it
        finally:
            store.close()
    labels = {s.key: s.label for s in SCENARIOS}
    labels.update(LEARNING_LABELS)
    return {
        "backend": backend_name,
        "metrics": {key: summarize(ranks[key]) for key in labels},
        "admissions": {key: sum(v) / max(len(v), 1) for key, v in admitted.items()},
        "labels": labels,
        "timing": timing,
    }


LEARNING_LABELS = {
    "default_test": "(c0) default, test half of the questions (odd positions)",
    "learning_test": "(c) reinforcement=True after complete() on the train half (even "
    "positions; score 1 when an evidence turn was recalled, else 0), test half",
}
LEARNING_KEYS = tuple(LEARNING_LABELS)


def _learning_run(
    url: str,
    conv: Conversation,
    cached: Any,
    clock: Any,
    backend: str,
    prefix: str,
    plain: SyncMemoryStore,
    ranks: dict[str, list[Outcome]],
    ft_dialect: str,
) -> None:
    """Learn from evaluated recalls of half the questions, measure on the other half.

    The eval signal stands in for an answer grader: whether the recall surfaced an
    evidence turn. Train and test questions never overlap, so nothing is learned from
    the questions measured.
    """
    learner = SyncMemoryStore.from_url(
        url, name=f"{prefix}_{conv.id}", embed=cached, embed_many=cached.embed_many,
        clock=clock, backend=backend, reinforcement=True, ft_dialect=ft_dialect,
    )  # fmt: skip
    try:
        for q in conv.questions[0::2]:
            hits = learner.recall(q.text, k=K, reinforce=False)
            found = first_rank([h.item.source or "" for h in hits], q.evidence) is not None
            learner.complete(hits.selection_id, 1.0 if found else 0.0)
        for q in conv.questions[1::2]:
            for key, store in (("default_test", plain), ("learning_test", learner)):
                hits = store.recall(q.text, k=K, reinforce=False)
                ranked = [h.item.source or "" for h in hits]
                ranks[key].append(Outcome(q.category, first_rank(ranked, q.evidence)))
    finally:
        learner.close()
