"""The lexical channel of hybrid recall (pure: no I/O).

* :func:`analyze` turns text into terms: lowercase, apostrophes dropped, Unicode word
  tokens (``[^\\W_]+``), a fixed English stopword list removed, a tiny suffix stemmer
  applied, terms cut to 64 characters.
* :func:`document_vector` hashes a memory's terms into a ``LEX_DIM``-wide float32 vector
  (signed feature hashing, weight ``1 + ln tf``), stored in the hash field ``lex`` and
  searched by inner product (a second VECTOR field on FT servers, numpy on the portable
  backend). It carries no corpus statistics, so it never goes stale.
* :func:`query_vector` hashes a query's distinct terms (weight 1, unit length).
* :func:`term_tokens` names each distinct term by a short digest (``lex_terms``, a TAG
  field beside ``lex``): the vector form's lexical search is filtered to the memories
  holding the query's rarest terms (:mod:`agent_memory.schema.term_choice`) instead of
  scanning the whole namespace.
* :class:`TermStats` are the per-namespace statistics (``{name}:__mem_df:{ns}``: fields
  ``n``, ``len`` and ``t:<term>``) and :func:`bm25` the exact Okapi BM25 (k1 1.2,
  b 0.75) of a candidate's text computed from them.

A store keeps each memory's terms in one of two *forms*, recorded in its metadata:
:data:`VECTOR_FORM` (the hashed ``lex`` vector, searched as a vector field or client-side,
and the ``lex_terms`` tokens that filter that search) or :data:`TEXT_FORM` (``lex_text``: the terms as space-separated text, indexed by a
server-side full-text index that ranks them with BM25). Both carry the same terms.

The analyzer is versioned by :data:`ANALYZER`; changing anything here that changes
terms or buckets must change it (stored vectors would no longer match queries).
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from agent_memory.core.replies import integer
from agent_memory.errors import ReplyParseError

LEX_DIM = 256
ANALYZER = "lex-v1"
LEGACY_VECTOR_FORM = f"{ANALYZER}:d={LEX_DIM}"  # schema 2-3: the vector without tokens
VECTOR_FORM = f"{LEGACY_VECTOR_FORM}+terms"
TEXT_FORM = f"{ANALYZER}:text"
ANALYZER_ID = LEGACY_VECTOR_FORM  # the form every store of schema version 2 holds
TOKEN_PREFIX = "t"
MAX_TERM_CHARS = 64
K1 = 1.2
B = 0.75

MAX_STAT = 2**53
"""The largest statistic read as a count: the scripts keep the counts far below it, and
BM25 computes with them as floats (a larger one overflows a float or loses its units)."""

STATS_DOCS = "n"
STATS_LENGTH = "len"
TERM_PREFIX = "t:"

_TOKEN = re.compile(r"[^\W_]+")

_STOPWORDS_TEXT = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves im ive id youre dont didnt doesnt isnt wasnt thats its s t also get got really
    yeah oh wow hey hi thanks thank much many lot like"""
#: Function words, pronouns, auxiliaries, question words and chat fillers (English).
STOPWORDS = frozenset(_STOPWORDS_TEXT.split())

_SUFFIXES = (("sses", "ss"), ("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("ly", ""))


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A tiny suffix stripper: plural/-ing/-ed/-ly, undouble, drop a final ``e``.

    Crude on purpose (no dependency, one suffix per word): ``painted``/``painting`` ->
    ``paint``, ``paintings`` -> ``painting``, ``loved``/``loves`` -> ``lov``, ``running`` ->
    ``run``, ``stories`` -> ``story``. Words of three letters or fewer and words with digits
    are kept as they are. The measured prototype (``benchmarks/quality/lexical.py``).
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix, repl in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)] + repl
            break
    else:
        if word.endswith("s") and not word.endswith(("ss", "us", "is")):
            word = word[:-1]
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
        word = word[:-1]
    if len(word) > 3 and word.endswith("e"):
        word = word[:-1]
    return word


def analyze(text: str) -> list[str]:
    """The terms of ``text``, in order, with repetitions."""
    words = _TOKEN.findall(text.lower().replace("'", "").replace("\u2019", ""))
    return [stem(w)[:MAX_TERM_CHARS] for w in words if w not in STOPWORDS]


@lru_cache(maxsize=8192)
def document_terms(text: str) -> tuple[str, ...]:
    """:func:`analyze` of a stored text, memoised: the same memories come back as
    candidates recall after recall, and rescoring analyses every candidate."""
    return tuple(analyze(text))


@lru_cache(maxsize=262144)
def bucket(term: str) -> tuple[int, float]:
    """Signed feature hashing: blake2b-64 of the UTF-8 term -> (index, +1 or -1)."""
    digest = hashlib.blake2b(term.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    h = int.from_bytes(digest, "little")
    return (h >> 1) % LEX_DIM, (1.0 if h & 1 else -1.0)


def document_vector(terms: Sequence[str]) -> NDArray[np.float32]:
    """The stored ``lex`` vector: ``sum sign(t) * (1 + ln tf(t))`` per bucket, not normalised
    (a text without terms is all zeros and is never found by the lexical channel)."""
    out = np.zeros(LEX_DIM, dtype=np.float64)
    for term, tf in Counter(terms).items():
        j, sign = bucket(term)
        out[j] += sign * (1.0 + math.log(tf))
    return out.astype(np.float32)


def query_vector(terms: Iterable[str]) -> NDArray[np.float32] | None:
    """The lexical query: each distinct term once, unit length; ``None`` without terms
    (or when every term's bucket cancelled out)."""
    out = np.zeros(LEX_DIM, dtype=np.float64)
    for term in set(terms):
        j, sign = bucket(term)
        out[j] += sign
    norm = float(np.linalg.norm(out))
    if norm == 0.0:
        return None
    return (out / norm).astype(np.float32)


@lru_cache(maxsize=262144)
def term_token(term: str) -> str:
    """A term's name in the ``lex_terms`` TAG field: ``t`` and 12 hex digits of its
    blake2b digest (tag-safe whatever the term's script; a collision only adds a
    candidate that rescoring then gives no lexical score)."""
    digest = hashlib.blake2b(
        term.encode("utf-8", "surrogatepass"), digest_size=6, person=b"lex-terms"
    )
    return TOKEN_PREFIX + digest.hexdigest()


def term_tokens(terms: Iterable[str]) -> str:
    """The ``lex_terms`` value of a text's terms: each distinct term's token, sorted,
    comma-separated (empty for a text without terms)."""
    return ",".join(sorted({term_token(t) for t in terms}))


def lex_blob(content: str) -> bytes:
    """FLOAT32 little-endian bytes of :func:`document_vector` of ``content``."""
    return np.asarray(document_vector(document_terms(content)), dtype="<f4").tobytes()


def lex_text(content: str) -> str:
    """The analysed terms of ``content`` joined by spaces (the ``TEXT_FORM`` field)."""
    return " ".join(document_terms(content))


@dataclass(frozen=True, slots=True)
class TermStats:
    """Corpus statistics of one namespace (possibly a little stale: harmless)."""

    docs: int = 0
    length: int = 0
    df: Mapping[str, int] = field(default_factory=dict)

    @property
    def avgdl(self) -> float:
        return self.length / self.docs if self.docs > 0 and self.length > 0 else 1.0

    def idf(self, term: str) -> float:
        """``ln(1 + (n - df + 0.5) / (df + 0.5))`` with ``df`` clamped to ``[0, n]``."""
        n = max(self.docs, 0)
        df = min(max(self.df.get(term, 0), 0), n)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def stats_fields(query_terms: Sequence[str]) -> list[str]:
    """Fields to HMGET from the statistics hash for a query (order of :func:`parse_stats`)."""
    return [STATS_DOCS, STATS_LENGTH, *(TERM_PREFIX + t for t in query_terms)]


def parse_stats(
    query_terms: Sequence[str],
    reply: Any,
    unreadable: Callable[[str, Any], None] | None = None,
) -> TermStats:
    """:class:`TermStats` from the HMGET reply of :func:`stats_fields` (missing: 0; below
    0, as concurrent removals can briefly leave a count: 0). A value that is not a count,
    or one beyond :data:`MAX_STAT` (another writer's damage: no store counts that far, and
    BM25 could not compute with it), reads as 0 and is reported to
    ``unreadable(field, value)``: the next write of the term replaces it."""
    values = list(reply or [])
    values += [None] * (2 + len(query_terms) - len(values))

    def count(name: str, value: Any) -> int:
        if value is None:
            return 0
        try:
            number = integer(value)
        except (ReplyParseError, ValueError, TypeError, ArithmeticError):
            number = None
        if number is None or number > MAX_STAT:
            if unreadable is not None:
                unreadable(name, value)
            return 0
        return max(number, 0)

    df = {t: count(TERM_PREFIX + t, v) for t, v in zip(query_terms, values[2:], strict=False)}
    return TermStats(count(STATS_DOCS, values[0]), count(STATS_LENGTH, values[1]), df)


@dataclass(frozen=True, slots=True)
class QueryScorer:
    """BM25 and idf coverage of documents for one query, with the query's idf computed
    once (a recall scores about a hundred candidates against the same query)."""

    terms: tuple[str, ...]
    idf: tuple[float, ...]
    mass: float
    avgdl: float
    vocabulary: frozenset[str]

    @classmethod
    def of(cls, query_terms: Iterable[str], stats: TermStats) -> QueryScorer:
        terms = tuple(sorted(set(query_terms)))
        idf = tuple(stats.idf(t) for t in terms)
        return cls(terms, idf, sum(idf), stats.avgdl, frozenset(terms))

    def score(self, doc_terms: Sequence[str]) -> tuple[float, float]:
        """``(bm25, coverage)`` of one document: Okapi BM25 over the distinct query terms,
        and the share of the query's idf mass the document contains."""
        shared = self.vocabulary.intersection(doc_terms)
        if not shared:
            return 0.0, 0.0
        norm = K1 * (1.0 - B + B * len(doc_terms) / self.avgdl)
        score = covered = 0.0
        # In the query's term order (the sums' order fixes their last bit), counting
        # only the terms the document holds: most hold one or two of the query's terms.
        for term, weight in zip(self.terms, self.idf, strict=True):
            if term in shared:
                count = doc_terms.count(term)
                score += weight * count * (K1 + 1.0) / (count + norm)
                covered += weight
        return score, (covered / self.mass if self.mass > 0 else 0.0)


def bm25(query_terms: Iterable[str], doc_terms: Sequence[str], stats: TermStats) -> float:
    """Okapi BM25 of one document for the distinct query terms (0 without overlap)."""
    return QueryScorer.of(query_terms, stats).score(doc_terms)[0]


def coverage(query_terms: Iterable[str], doc_terms: Sequence[str], stats: TermStats) -> float:
    """The share of the query's idf mass (over its distinct terms) the document
    contains: 1 when it has every query term, small when it shares only common words
    (0 without overlap, or for a query without terms)."""
    return QueryScorer.of(query_terms, stats).score(doc_terms)[1]


def stats_delta(contents: Iterable[str], sign: int) -> dict[str, int]:
    """HINCRBY amounts that add (``sign=1``) or remove (``-1``) texts from the statistics."""
    delta: Counter[str] = Counter()
    for content in contents:
        terms = document_terms(content)
        delta[STATS_DOCS] += sign
        delta[STATS_LENGTH] += sign * len(terms)
        for term in set(terms):
            delta[TERM_PREFIX + term] += sign
    return {k: v for k, v in delta.items() if v}


ADD_STAT_LUA = """
local function add_stat(key, field, delta)
  local v = redis.pcall('HINCRBY', key, field, delta)
  if type(v) == 'table' then
    if redis.call('TYPE', key)['ok'] ~= 'hash' then redis.call('DEL', key) end
    redis.call('HSET', key, field, delta)
    return tonumber(delta)
  end
  return v
end
"""
"""Lua: add ``delta`` to a term statistic; one that another writer left unreadable (not
an integer), or a statistics key it replaced by another type, is replaced by ``delta``:
the statistics are derived data, and damage to them must not fail the write they
belong to."""

ADJUST_STATS = (
    ADD_STAT_LUA
    + """
for i = 1, #ARGV, 2 do
  local v = add_stat(KEYS[1], ARGV[i], ARGV[i + 1])
  if v <= 0 then redis.call('HDEL', KEYS[1], ARGV[i]) end
end
return 1
"""
)
"""ARGV = [field, delta, ...]: add each delta; a count reaching 0 (or below: statistics
drift after unseen expiries) removes its field, so the hash holds only live terms."""


REPLACE_STATS = "redis.call('DEL', KEYS[1])\n" + ADJUST_STATS
""":data:`ADJUST_STATS` on an emptied hash: the statistics recounted from scratch, in
one script (atomic on any deployment; valkey-py's cluster client has no MULTI/EXEC)."""


def replace_args(key: str, counts: Mapping[str, int]) -> tuple[str, ...]:
    """``EVAL`` arguments replacing the statistics hash ``key`` by ``counts``."""
    flat = [x for name in sorted(counts) for x in (name, str(counts[name]))]
    return ("EVAL", REPLACE_STATS, "1", key, *flat)


def adjust_args(key: str, delta: Mapping[str, int]) -> tuple[str, ...] | None:
    """``EVAL`` arguments applying ``delta`` to the statistics hash ``key`` (``None``: no-op)."""
    if not delta:
        return None
    flat = [x for name in sorted(delta) for x in (name, str(delta[name]))]
    return ("EVAL", ADJUST_STATS, "1", key, *flat)
