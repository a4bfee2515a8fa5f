"""``agent-memory demo``: remember a short history, recall from it, show what happened."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from agent_memory import MemoryInput, Scope, SyncMemoryStore
from agent_memory.embedders import choose_embedder
from agent_memory.store.summarizers import extractive_summarizer

HISTORY: list[tuple[str, float, list[str]]] = [
    ("The user prefers dark mode in every editor.", 0.8, ["prefs"]),
    ("The user's name is Ada and she works on the payments team.", 0.9, ["profile"]),
    ("Deploys to production happen on Tuesdays after the 10am stand-up.", 0.6, ["ops"]),
    ("Ada is allergic to peanuts; never suggest recipes with them.", 1.0, ["health"]),
    ("The staging database was migrated to Valkey 8 last week.", 0.5, ["ops"]),
    ("Ada asked for answers in short bullet points.", 0.7, ["prefs"]),
    ("The payments service times out when the card network is slow.", 0.6, ["incidents"]),
    ("Ada's favourite programming language is Python.", 0.4, ["profile"]),
]


QUESTIONS = [
    "which colour theme does the user like?",
    "when do we ship to production?",
    "can I recommend a peanut butter cookie recipe?",
    "what is the weather on Mars?",
]


def run_demo(
    url: str,
    *,
    name: str,
    as_json: bool,
    out: Callable[[str], None] = print,
    embedder: str = "auto",
    dim: int | None = None,
) -> dict[str, Any]:
    """Run the scripted demo against store ``name`` at ``url`` (namespace ``demo``, so
    the other commands find it) with the embedder ``--embedder``/``--dim`` name (the
    one the other commands then need); returns what was shown."""
    embed, embedder_name = choose_embedder(embedder, dim)
    scope = Scope(namespace="demo", agent_id="assistant")
    report: dict[str, Any] = {"embedder": embedder_name, "recalls": [], "name": name}
    store = SyncMemoryStore.from_url(url, name=name, embed=embed)
    with store:
        status = store.ensure_index()
        report["backend"] = status.backend
        report["dialect"] = str(status.dialect)
        store.forget_by_scope(scope)  # re-runs start from the same history
        ids = store.remember_many(
            [MemoryInput(content=c, importance=i, tags=t, scope=scope) for c, i, t in HISTORY]
        )
        report["remembered"] = len(ids)
        for question in QUESTIONS:
            hits = store.recall(question, scope=scope, k=3)
            report["recalls"].append(
                {
                    "question": question,
                    "hits": [
                        {"content": h.item.content, "score": round(h.score, 3),
                         "distance": round(h.distance, 3)}
                        for h in hits
                    ],
                    "nearest_distance": hits.nearest_distance,
                }
            )  # fmt: skip
        before = store.list(scope=scope).total
        result = store.consolidate(
            mode="summary", scope=scope, tags=["ops"], summarize=extractive_summarizer(3)
        )
        summary = store.get(result.created[0]) if result.created else None
        report["consolidation"] = {
            "summarised": len(result.deleted),
            "summary": summary.content if summary else None,
            "memories_before": before,
            "memories_after": store.list(scope=scope).total,
        }
        report["stats"] = store.stats().counters
    if as_json:
        out(json.dumps(report, indent=2))
        return report
    out(f"backend: {report['backend']} ({report['dialect']}); embedder: {embedder_name}")
    out(f"remembered {len(ids)} memories in store '{name}', namespace 'demo'\n")
    out(
        "score: how well a memory answers (relevance, recency, importance; higher is "
        "better)\ndistance: cosine distance of the embeddings (0 same meaning, 2 opposite; "
        "a memory\n  found by its words may be returned at a large distance)\n"
    )
    for entry in report["recalls"]:
        out(f"? {entry['question']}")
        if not entry["hits"]:
            out("    nothing relevant stored: no memory passed the threshold")
        else:
            out(f"    {'score':>5}  {'distance':>8}  memory")
        for hit in entry["hits"]:
            out(f"    {hit['score']:5.3f}  {hit['distance']:8.3f}  {hit['content']}")
        out("")
    c = report["consolidation"]
    out(
        f"consolidated {c['summarised']} 'ops' memories into one summary "
        f"({c['memories_before']} -> {c['memories_after']} memories):"
    )
    out(f"    {c['summary']}")
    return report
