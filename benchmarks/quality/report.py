"""Markdown tables for the quality results (Part 1: library runs; Part 2: issue 11 research)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from benchmarks.quality.data import CATEGORY_NAMES

COLUMNS = ("1", "2", "3", "4", "all")


def _cell(m: Mapping[str, float] | None) -> str:
    if not m:
        return "-"
    return f"{m['r@1']:.3f} / {m['r@5']:.3f} / **{m['r@10']:.3f}** / {m['mrr']:.3f}"


def _header(first: list[str]) -> list[str]:
    names = [f"{CATEGORY_NAMES.get(int(c), c)} ({c})" if c != "all" else "all" for c in COLUMNS]
    return [
        "| " + " | ".join(first + names) + " |",
        "|" + "---|" * (len(first) + len(COLUMNS)),
    ]


def _counts(metrics: Mapping[str, Mapping[str, float]]) -> str:
    return ", ".join(
        f"{CATEGORY_NAMES.get(int(c), c) if c != 'all' else 'all'} {int(metrics[c]['n'])}"
        for c in COLUMNS
        if c in metrics
    )


def part1_table(result: Mapping[str, Any]) -> list[str]:
    lines = _header(["system", "server / backend", "scenario"])
    lines[0] += " off-topic admissions / question |"
    lines[1] += "---|"
    for kind, run in result["library"].items():
        for key, metrics in run["metrics"].items():
            label = run["labels"][key]
            cells = [_cell(metrics.get(c)) for c in COLUMNS]
            admissions = run.get("admissions", {}).get(key)
            cells.append(f"{admissions:.2f}" if admissions is not None else "-")
            lines.append(
                f"| agent-memory | {kind} / {run['backend']} | {label} | "
                + " | ".join(cells)
                + " |"
            )
    peer = result.get("peer") or {}
    for key, metrics in (peer.get("metrics") or {}).items():
        label = {"cosine": "(a) plain cosine", "default": "(b) peer defaults (threshold 0.33)",
                 "default_nogate": "(b') peer default weights, threshold 2.0"}[key]  # fmt: skip
        cells = [_cell(metrics.get(c)) for c in COLUMNS]
        lines.append(
            f"| betterdb-agent-memory {peer.get('version', '?')} | {peer.get('server', '?')} | {label} | "
            + " | ".join(cells)
            + " |"
        )
    for name, metrics in result.get("reference", {}).items():
        cells = [_cell(metrics.get(c)) for c in COLUMNS]
        lines.append(f"| numpy reference | - | {name} | " + " | ".join(cells) + " |")
    return lines


def part2_table(research: Mapping[str, Any]) -> list[str]:
    lines = _header(["section", "candidate"])
    lines[0] = lines[0].rstrip(" |") + " | LOCO-fitted constant |"
    lines[1] += "---|"
    for row in research["rows"]:
        cells = [_cell(row["metrics"].get(c)) for c in COLUMNS]
        fitted = row.get("fitted")
        fitted_text = ", ".join(f"{k}: {v:g}" for k, v in fitted.items()) if fitted else ""
        lines.append(
            f"| {row['section']} | {row['name']} | " + " | ".join(cells) + f" | {fitted_text} |"
        )
    return lines


def markdown(result: Mapping[str, Any]) -> str:
    ds = result["dataset"]
    out = [
        "# Retrieval quality on LoCoMo (issue 8 quality scenario, issue 11 research)",
        "",
        f"Command: `{result['command']}`  ",
        f"Data: {ds['conversations']} conversations, {ds['memories']} turns stored as memories, "
        f"{ds['questions']} questions ({_counts(ds['metrics_counts'])}); category 5 "
        "(adversarial, unanswerable) excluded. Embedder: "
        f"`{result['embedder']}`. Versions: {result['versions']}.",
        "",
        "Each cell: recall@1 / recall@5 / **recall@10** / MRR@10. recall@k = share of questions "
        "with at least one evidence turn in the top k; MRR@10 = mean 1/rank of the first "
        "evidence turn within the top 10. Memory text = `Speaker: utterance` (+ "
        "`[shared a photo: caption]`), speaker also a tag, created at its session's date; "
        "questions asked one hour after the last session, `k=10`, `reinforce=False`.",
        "",
        "## Part 1: the library on real servers",
        "",
        *part1_table(result),
        "",
        "Server kinds (`scripts/test_servers.py`): `valkey-redisearch` = Valkey 9.1.2 with the "
        "RediSearch 2.10 module (FT backend with the RediSearch features: the lexical "
        "channel is a TEXT field ranked by BM25); `valkey-redisearch (baseline dialect)` = the "
        'same server with `ft_dialect="baseline"`, sending only what valkey-search 1.0.2 '
        "accepts (the lexical channel is the hashed `lex` vector field), as on production "
        "valkey-search; `valkey-search-1.0` / `valkey-search-1.2` = the same Valkey with the "
        "real valkey-search module (when its builds are given); `valkey` = the same Valkey "
        "without a module (portable backend). "
        "Off-topic admissions: memories returned (k=10) per question of "
        "`benchmarks/quality/offtopic.py` (55 questions no conversation answers), asked of "
        "every conversation.",
        "",
        f"(c) learning features: {result['learning']}.",
        "",
    ]
    for kind, run in result["library"].items():
        t = run["timing"]
        out.append(
            f"- {kind}: remember_many of {t['memories']} memories {t['remember_s']:.2f} s, "
            f"{t['recalls']} recalls {t['recall_s']:.2f} s (vectors precomputed)."
        )
    if result.get("peer", {}).get("skipped"):
        out.append(f"- peer: not run ({result['peer']['skipped']}).")
    research = result.get("research")
    if research:
        out += [
            "",
            "## Part 2: issue 11 candidates (numpy, same cached vectors)",
            "",
            "Fitted constants are chosen by leave-one-conversation-out cross-validation "
            "(objective recall@10 + 0.1 MRR@10 on the other four conversations); only "
            "held-out numbers are shown, with the value chosen for each held-out conversation. "
            f"Share of questions whose every evidence turn lies beyond cosine distance 0.65: "
            f"{research['gate_loss_0.65']:.3f}. Corpus sizes: {research['corpus_sizes']}.",
            "",
            *part2_table(research),
        ]
    rows = result.get("precision")
    if rows:
        out += [
            "",
            "## Part 3: issue 15 gates and fusion (numpy, same cached vectors)",
            "",
            "See `benchmarks/quality/PRECISION.md`. Held-out (leave-one-conversation-out) "
            "numbers; admissions are memories returned per off-topic question.",
            "",
            "| rule | r@1 | r@5 | r@10 | MRR@10 | admissions / off-topic question | LOCO choices |",
            "|---|---|---|---|---|---|---|",
        ]
        for r in rows:
            m = r["metrics"]["all"]
            chosen = ", ".join(f"{c:g}" for c in r["chosen"]) if r.get("chosen") else "-"
            out.append(
                f"| {r['label']} | {m['r@1']:.3f} | {m['r@5']:.3f} | {m['r@10']:.3f} | "
                f"{m['mrr']:.3f} | {r['admissions']:.2f} | {chosen} |"
            )
    probe = result.get("ft_probe")
    if probe:
        out += [
            "",
            f"### The hybrid winner on a real FT server ({probe['server']})",
            "",
            "Second VECTOR field `lex` (D=256, FLOAT32, `DISTANCE_METRIC IP`) next to `vector`; "
            "both KNN queries (top 50 each) in one pipelined round trip; exact BM25 of the "
            "returned texts and CombSUM fusion client-side.",
            "",
            "| lex field algorithm | lexical pool vs exact top-50 | 1 KNN median ms | "
            "2 KNN pipelined median ms | all: r@1 / r@5 / r@10 / MRR@10 |",
            "|---|---|---|---|---|",
        ]
        for run in probe["runs"]:
            out.append(
                f"| {run['algorithm']} | {run['lexical_pool_recall_vs_exact']:.3f} | "
                f"{run['knn_one_ms_median']:.2f} | {run['knn_two_pipelined_ms_median']:.2f} | "
                f"{_cell(run['metrics']['all'])} |"
            )
    notes = result.get("notes")
    if notes:
        out += ["", notes.strip()]
    return "\n".join(out) + "\n"
