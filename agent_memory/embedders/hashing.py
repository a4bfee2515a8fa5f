"""A dependency-free, deterministic, lexical embedder (the feature-hashing trick).

Text is NFKC-normalised and case-folded, split into runs of Unicode word characters
(``\\w+``), and every n-gram of those tokens for n in ``ngram_range`` (unigrams and
bigrams by default) is hashed with BLAKE2b into one of ``dim`` buckets with a sign taken
from the same digest (signed hashing, so collisions cancel instead of piling up). A
feature that occurs ``tf`` times adds ``1 + ln(tf)`` (sublinear term frequency). The
vector is then L2-normalised.

BLAKE2b (not Python's salted ``hash()``) makes the vectors identical across processes,
machines and Python versions, so they can be stored and compared later. The only thing
that can change them is a Unicode database update that reclassifies a character (for
example a newly assigned letter), which affects texts containing such characters only.

It captures shared words, not meaning: "dark mode" is close to "mode dark" but not to
"night theme". Use it for tests, demos and as a no-extras fallback.
"""

from __future__ import annotations

import hashlib
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from agent_memory.embedders.base import (
    ThreadedAsyncMixin,
    check_dim,
    check_text,
    check_texts,
    finish_vectors,
)
from agent_memory.errors import InvalidInputError

_TOKEN_RE = re.compile(r"\w+")
_PERSON = b"agent-memory/h1"  # BLAKE2b personalisation: domain-separates our hashes
_MAX_N = 8
_MAX_SEED = 2**64 - 1
#: The reserved feature of a text without any word character.
EMPTY_FEATURE = ""


#: Features up to this many characters are cached. Words and short n-grams repeat
#: across texts, so caching them pays; a long token (a hex dump, a base64 blob, up to
#: the text's whole length) rarely repeats, and a cache entry keeps its string alive
#: for the process: 65,536 of them once held gigabytes.
CACHED_FEATURE_CHARS = 64


def _hash_bucket(feature: str, salt: bytes, dim: int) -> tuple[int, float]:
    digest = hashlib.blake2b(
        feature.encode("utf-8"), digest_size=8, salt=salt, person=_PERSON
    ).digest()
    h = int.from_bytes(digest, "little")
    return h % dim, (-1.0 if h >> 63 else 1.0)


_cached_bucket = lru_cache(maxsize=65_536)(_hash_bucket)


def _bucket(feature: str, salt: bytes, dim: int) -> tuple[int, float]:
    """The bucket and sign of ``feature`` (cached for short features only)."""
    if len(feature) <= CACHED_FEATURE_CHARS:
        return _cached_bucket(feature, salt, dim)
    return _hash_bucket(feature, salt, dim)


def _features(text: str, lo: int, hi: int) -> Counter[str]:
    tokens = _TOKEN_RE.findall(unicodedata.normalize("NFKC", text).casefold())
    counts: Counter[str] = Counter()
    for n in range(lo, hi + 1):
        for i in range(len(tokens) - n + 1):
            counts[" ".join(tokens[i : i + n])] += 1
    return counts


@dataclass(frozen=True, slots=True)
class HashingEmbedder(ThreadedAsyncMixin):
    """Deterministic lexical embedder; needs nothing but the standard library and numpy.

    Texts that share words are closer (higher cosine) than texts that do not. A text
    with no word character at all (``""``, whitespace, punctuation only) maps to one
    fixed unit vector: the signed one-hot vector of the reserved empty feature, the
    same for every such text and never NaN.

    Args:
        dim: vector length (1 to 65536; 384 by default, the size of MiniLM vectors).
        ngram_range: ``(lo, hi)``, the token n-gram sizes hashed (``1 <= lo <= hi <= 8``).
        seed: an int in ``[0, 2**64)`` salting the hash; different seeds give
            unrelated vector spaces.

    Raises:
        InvalidInputError: an argument is out of range.
    """

    dim: int = 384
    ngram_range: tuple[int, int] = field(default=(1, 2), kw_only=True)
    seed: int = field(default=0, kw_only=True)

    def __post_init__(self) -> None:
        check_dim(self.dim)
        ngram = self.ngram_range
        if (
            not isinstance(ngram, (tuple, list))
            or len(ngram) != 2
            or not all(isinstance(n, int) and not isinstance(n, bool) for n in ngram)
            or not 1 <= ngram[0] <= ngram[1] <= _MAX_N
        ):
            raise InvalidInputError(
                f"ngram_range must be (lo, hi) with 1 <= lo <= hi <= {_MAX_N}, got {ngram!r}",
                field="ngram_range",
            )
        object.__setattr__(self, "ngram_range", (ngram[0], ngram[1]))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise InvalidInputError(f"seed must be an int, got {self.seed!r}", field="seed")
        if not 0 <= self.seed <= _MAX_SEED:
            raise InvalidInputError("seed must be in [0, 2**64)", field="seed")

    @property
    def recommended_threshold(self) -> float:
        """Cosine-distance recall threshold that suits this model (lexical: texts sharing a word stay below ~0.95)."""
        return 0.95

    @property
    def id(self) -> str:
        """``hashing-v1:dim=D:ngram=LO-HI:seed=S``; changes whenever the vectors would."""
        lo, hi = self.ngram_range
        return f"hashing-v1:dim={self.dim}:ngram={lo}-{hi}:seed={self.seed}"

    def _raw(self, text: str) -> list[float]:
        salt = self.seed.to_bytes(8, "little")
        vec = [0.0] * self.dim
        counts = _features(text, *self.ngram_range) or Counter({EMPTY_FEATURE: 1})
        for feature, tf in counts.items():
            bucket, sign = _bucket(feature, salt, self.dim)
            vec[bucket] += sign * (1.0 + math.log(tf))
        if not any(vec):  # every feature cancelled out: fall back to the empty feature
            bucket, sign = _bucket(EMPTY_FEATURE, salt, self.dim)
            vec[bucket] = sign
        return vec

    def embed(self, text: str) -> list[float]:
        """Embed one text into an L2-normalised vector of ``dim`` floats.

        Raises:
            InvalidInputError: ``text`` is not a str or is not valid Unicode.
        """
        return finish_vectors(
            [self._raw(check_text(text))], rows=1, dim=self.dim, source="HashingEmbedder"
        )[0]

    def embed_many(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed several texts (one vector per text, in order; ``[]`` for ``[]``).

        Raises:
            InvalidInputError: ``texts`` is not a sequence of valid strings.
        """
        checked = check_texts(texts)
        if not checked:
            return []
        return finish_vectors(
            [self._raw(t) for t in checked],
            rows=len(checked),
            dim=self.dim,
            source="HashingEmbedder",
        )
