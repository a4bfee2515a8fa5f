"""Labels: a bounded, controlled ``dict[str, list[str]]`` per memory.

Keys and values are normalised (Unicode casefold, inner whitespace collapsed, surrounding
space stripped; duplicates collapse). A :class:`LabelPolicy` bounds cardinality: a write
outside it raises :class:`~agent_memory.errors.InvalidInputError`. Each ``key=value``
pair, its key escaped (:func:`_pair`), is indexed as one TAG token (see
:mod:`agent_memory.schema.encoding`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from agent_memory.errors import InvalidInputError
from agent_memory.schema.encoding import encode_value

Labels = dict[str, tuple[str, ...]]

MAX_KEYS = 16
MAX_VALUES_PER_KEY = 16
MAX_LABEL_CHARS = 64


def normalise(text: object, *, what: str) -> str:
    if not isinstance(text, str):
        raise InvalidInputError(
            f"label {what} must be a str, got {type(text).__name__}", field="labels"
        )
    value = " ".join(text.split()).casefold()
    if not value or len(value) > MAX_LABEL_CHARS:
        raise InvalidInputError(
            f"label {what} must be 1-{MAX_LABEL_CHARS} characters, got {text[:80]!r}",
            field="labels",
        )
    try:  # a lone surrogate would fail only when the write encodes it (or digests it)
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"label {what} {text!r} is not valid Unicode (a lone surrogate)", field="labels"
        ) from exc
    return value


@dataclass(frozen=True, slots=True)
class LabelPolicy:
    """Which labels writes may carry.

    Attributes:
        allowed_keys: the only keys accepted (``None``: any key).
        allowed_values: per key, the only values accepted (keys absent here accept any
            value).
        max_values_per_key: most values one key may carry on one memory.
    """

    allowed_keys: frozenset[str] | None = None
    allowed_values: Mapping[str, frozenset[str]] = field(default_factory=dict)
    max_values_per_key: int = 8

    def __post_init__(self) -> None:
        """Normalise the keys and values.

        Raises:
            InvalidInputError: ``allowed_keys`` not a collection of strings (a string
                alone would read as its letters), ``allowed_values`` not a mapping of key
                to a collection of strings, or ``max_values_per_key`` not an int in
                [1, 16].
        """
        if self.allowed_keys is not None:
            keys = _names(self.allowed_keys, of="allowed_keys", what="key")
            object.__setattr__(self, "allowed_keys", keys)
        if not isinstance(self.allowed_values, Mapping):
            raise InvalidInputError(
                "allowed_values must be a mapping of label key -> collection of values, "
                f"got {type(self.allowed_values).__name__}",
                field="label_policy",
            )
        object.__setattr__(
            self,
            "allowed_values",
            {
                _policy_name(k, of="allowed_values", what="key"): _names(
                    values, of=f"allowed_values[{k!r}]", what="value"
                )
                for k, values in self.allowed_values.items()
            },
        )
        limit = self.max_values_per_key
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise InvalidInputError(
                f"max_values_per_key must be an int, got {type(limit).__name__}",
                field="label_policy",
            )
        if not 1 <= limit <= MAX_VALUES_PER_KEY:
            raise InvalidInputError(
                f"max_values_per_key must be in [1, {MAX_VALUES_PER_KEY}]", field="label_policy"
            )


def _names(values: object, *, of: str, what: str) -> frozenset[str]:
    """A policy's collection of label keys or values, normalised; a string (whose
    letters it would iterate), bytes or a mapping is refused."""
    if isinstance(values, (str, bytes, Mapping)) or not isinstance(values, Iterable):
        raise InvalidInputError(
            f"{of} must be a collection of strings (a list or set), got {type(values).__name__}",
            field="label_policy",
        )
    return frozenset(_policy_name(v, of=of, what=what) for v in values)


def _policy_name(value: object, *, of: str, what: str) -> str:
    """One label key or value of a policy, normalised (``field="label_policy"``)."""
    try:
        return normalise(value, what=what)
    except InvalidInputError as exc:
        raise InvalidInputError(f"{of}: {exc}", field="label_policy") from exc


def check_labels(labels: object, policy: LabelPolicy | None, *, enforce: bool = True) -> Labels:
    """Normalise ``labels`` and check them against ``policy`` (when ``enforce``)."""
    if labels is None:
        return {}
    if not isinstance(labels, Mapping):
        raise InvalidInputError("labels must be a mapping of key -> list of values", field="labels")
    out: Labels = {}
    for raw_key, raw_values in labels.items():
        key = normalise(raw_key, what="key")
        # A mapping iterates as its keys: its values would be dropped without a word.
        if isinstance(raw_values, (str, bytes, Mapping)) or not isinstance(raw_values, Iterable):
            raise InvalidInputError(f"label {key!r} needs a list of values", field="labels")
        values: list[str] = []
        for raw in raw_values:
            value = normalise(raw, what="value")
            if value not in values:
                values.append(value)
        if not values:
            continue
        merged = tuple(sorted(set(out.get(key, ())) | set(values)))
        out[key] = merged
    if len(out) > MAX_KEYS:
        raise InvalidInputError(f"at most {MAX_KEYS} label keys per memory", field="labels")
    if policy is not None and enforce:
        for key, kept in out.items():
            if policy.allowed_keys is not None and key not in policy.allowed_keys:
                raise InvalidInputError(
                    f"label key {key!r} is not allowed by the policy", field="labels"
                )
            allowed = policy.allowed_values.get(key)
            if allowed is not None and not set(kept) <= allowed:
                raise InvalidInputError(
                    f"label values {sorted(set(kept) - allowed)} of {key!r} are not allowed",
                    field="labels",
                )
            if len(kept) > policy.max_values_per_key:
                raise InvalidInputError(
                    f"label {key!r} has {len(kept)} values, over the policy's "
                    f"{policy.max_values_per_key}",
                    field="labels",
                )
    else:
        for key, kept in out.items():
            if len(kept) > MAX_VALUES_PER_KEY:
                raise InvalidInputError(f"label {key!r} has too many values", field="labels")
    return out


def _pair(key: str, value: str) -> str:
    """``key=value`` with ``\\`` and ``=`` of the key escaped (``\\\\``, ``\\=``): the
    first unescaped ``=`` ends the key, so no two pairs give the same text
    (``{"team=red": ["x"]}`` and ``{"team": ["red=x"]}`` did). A key holding neither
    gives the text, and so the token and the context digest, it always gave."""
    if "=" in key or "\\" in key:
        key = key.replace("\\", "\\\\").replace("=", "\\=")
    return f"{key}={value}"


def label_token(key: str, value: str) -> str:
    """The indexed TAG token of one ``key=value`` pair (:func:`_pair`)."""
    return encode_value(_pair(key, value))


def label_tokens(labels: Labels) -> list[str]:
    return [label_token(k, v) for k, values in sorted(labels.items()) for v in values]


def filter_groups(labels: Labels) -> tuple[tuple[str, ...], ...]:
    """Recall filter: for each key, any of its values (AND across keys)."""
    return tuple(tuple(label_token(k, v) for v in values) for k, values in sorted(labels.items()))


def context_digest(labels: Labels) -> str | None:
    """Names the label combination a utility observation was made in."""
    if not labels:
        return None
    # Normalised labels hold no "\x1f" (whitespace), so the pairs join unambiguously.
    raw = "\x1f".join(_pair(k, v) for k, values in sorted(labels.items()) for v in values)
    return hashlib.blake2b(raw.encode("utf-8"), digest_size=8).hexdigest()


def overlap(query: Labels, memory: Labels) -> float:
    """Share of the query's label pairs the memory carries (0 when the query has none)."""
    pairs = [(k, v) for k, values in query.items() for v in values]
    if not pairs:
        return 0.0
    return sum(1 for k, v in pairs if v in memory.get(k, ())) / len(pairs)
