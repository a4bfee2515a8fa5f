"""Which query terms bring lexical candidates (pure: no I/O).

A term that most memories hold adds almost nothing to a memory's BM25 (its idf is near
zero) but makes the server visit every memory that holds it: with one such word in a
query ("user", the main person's name), a lexical search costs a scan of the whole
namespace. So the lexical channel generates its candidates from the query's rarest
terms only, while the summed document frequencies of the chosen terms stay within a
budget (the store's ``lexical_budget``, :data:`CANDIDATE_BUDGET` memories by default,
at least twice the candidates asked for); every
candidate, however it was found, is then rescored with exact BM25 over *all* the query's
terms. The search's cost is bounded by the budget instead of growing with the namespace.

A query whose every term is held by more memories than the budget brings no lexical
candidates: its terms still score the semantic candidates. The chosen terms' clauses
must also fit the query string the server accepts (a byte ``room``): of a long query,
the rarest that fit are kept.

The document frequencies come from the namespace's term statistics, read with every
hybrid recall: :class:`DocumentFrequencies` keeps the last value read for each recently
queried term and each namespace's size, so the choice costs no round trip for terms seen
before (a term is at most one recall stale) or in a namespace no larger than the budget,
and one small read for a query with a term not seen yet in a larger one.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress

from agent_memory.schema.lexical import TermStats

CANDIDATE_BUDGET = 200
"""The default of the memories the lexical search of one pool may visit (sum of the
chosen terms' document frequencies; the store's ``lexical_budget``). Chosen by data:
benchmarks/SPEED.md."""


def lexical_budget(candidates: int, budget: int = CANDIDATE_BUDGET) -> int:
    """The visit budget of a lexical search asking for ``candidates`` matches, from
    the store's ``budget`` (at least twice the candidates)."""
    return max(budget, 2 * candidates)


def candidate_terms(
    terms: Iterable[str],
    df: Mapping[str, int],
    budget: int = CANDIDATE_BUDGET,
    docs: int | None = None,
    *,
    size: int | Callable[[str], int] | None = None,
    room: int = 0,
) -> tuple[str, ...]:
    """The rarest of ``terms`` whose document frequencies (``df``, missing: 0) sum to at
    most ``budget``, sorted; empty when even the rarest is held by more memories. Every
    term when the namespace holds at most ``budget`` memories (``docs``): no search can
    visit more.

    With ``size`` (the bytes a term adds to the search's query: the same for every term,
    or a function of the term), the chosen terms are also cut to those whose sizes sum to
    at most ``room``: the rarest held by some memory first, then those no memory was seen
    holding (``df`` 0 or unknown: they can bring a candidate only if the statistics are
    stale). A long query (hundreds of distinct terms, each free in a small namespace)
    made a query string the server refused."""
    distinct = set(terms)
    if docs is not None and docs <= budget:
        chosen = distinct
    else:
        chosen = set()
        total = 0
        for term in sorted(distinct, key=lambda t: (max(df.get(t, 0), 0), t)):
            total += max(df.get(term, 0), 0)
            if total > budget:
                break
            chosen.add(term)
    if size is not None:
        chosen = _within(chosen, df, size, room)
    return tuple(sorted(chosen))


def _within(
    chosen: set[str], df: Mapping[str, int], size: int | Callable[[str], int], room: int
) -> set[str]:
    if isinstance(size, int):
        if len(chosen) * size <= room:
            return chosen  # the common case: a question of a few words
        fixed = size
        each: Callable[[str], int] = lambda _: fixed  # noqa: E731
    else:
        if sum(size(t) for t in chosen) <= room:
            return chosen
        each = size
    kept: set[str] = set()
    total = 0
    for term in sorted(chosen, key=lambda t: (df.get(t, 0) <= 0, max(df.get(t, 0), 0), t)):
        total += each(term)
        if total > room:
            break
        kept.add(term)
    return kept


class DocumentFrequencies:
    """The document frequency of recently queried terms, per namespace, as last read
    from the term statistics (least recently used terms forgotten past ``capacity``).
    Shared by the threads of a blocking store, lock-free: each step is one dict
    operation, and one that another thread's overtook is skipped (an estimate)."""

    def __init__(self, capacity: int = 65536) -> None:
        self.capacity = capacity
        self._df: OrderedDict[tuple[str, str], int] = OrderedDict()
        self._docs: dict[str, int] = {}

    def docs(self, namespace: str) -> int | None:
        """The namespace's memory count as last read (None: never read)."""
        return self._docs.get(namespace)

    def unknown(self, namespace: str, terms: Sequence[str]) -> list[str]:
        """The terms whose frequency in ``namespace`` was never read (or was forgotten)."""
        return [t for t in terms if (namespace, t) not in self._df]

    def get(self, namespace: str, terms: Sequence[str]) -> dict[str, int]:
        """The known frequencies of ``terms`` (unknown terms are left out)."""
        out = {}
        for term in terms:
            value = self._df.get((namespace, term))
            if value is not None:
                # Gone meanwhile (another thread's learn pushed it out): still known here.
                with suppress(KeyError):
                    self._df.move_to_end((namespace, term))
                out[term] = value
        return out

    def learn(self, namespace: str, stats: TermStats, terms: Sequence[str]) -> None:
        """Record what a read of the statistics said about ``terms`` (absent: 0)."""
        self._docs[namespace] = stats.docs
        # The threads of a blocking store share this without a lock: a step another
        # thread's eviction overtook (the key gone, the map emptied) is skipped.
        for term in terms:
            key = (namespace, term)
            self._df[key] = stats.df.get(term, 0)
            with suppress(KeyError):
                self._df.move_to_end(key)
        while len(self._df) > self.capacity:
            with suppress(KeyError):
                self._df.popitem(last=False)
