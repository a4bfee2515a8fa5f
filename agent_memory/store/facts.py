"""Pure helpers of fact reconciliation: subject keys, dates, newest-wins."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime, timezone

from agent_memory.errors import InvalidInputError
from agent_memory.schema.types import Fact


def subject_key(subject: str) -> str:
    """Subjects match ignoring case and surrounding whitespace (Unicode casefold)."""
    return " ".join(subject.split()).casefold()


def parse_fact_date(value: str | None) -> datetime | None:
    """An ISO-8601 date (``2024-05-01``) or datetime (``2024-05-01T10:00:00+02:00``,
    ``Z`` accepted) as an aware UTC datetime; a date means its midnight UTC and a naive
    datetime is taken as UTC. ``None`` stays ``None``.

    Raises:
        InvalidInputError: any other format.
    """
    if value is None:
        return None
    text = value.strip()
    try:
        if len(text) == 10:
            day = date.fromisoformat(text)
            return datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError as exc:
        raise InvalidInputError(
            f"fact date {value!r} is not an ISO-8601 date or datetime", field="date"
        ) from exc
    return (
        parsed.replace(tzinfo=timezone.utc)
        if parsed.tzinfo is None
        else parsed.astimezone(timezone.utc)
    )


def check_fact(fact: object, position: int = 0) -> Fact:
    """Validate one extractor output (``position``: its index in what was returned)."""
    if not isinstance(fact, Fact):
        raise InvalidInputError(
            f"extract_facts must return Fact objects, got {type(fact).__name__}",
            field="extract_facts",
        )
    if not isinstance(fact.subject, str) or not fact.subject.strip():
        raise InvalidInputError(f"fact {position} needs a non-empty subject", field="extract_facts")
    # Checked as strictly as the statement: a truthy non-bool (``tombstone="no"``) would
    # retract the subject's live fact, and a non-text date failed outside our errors.
    if not isinstance(fact.tombstone, bool):
        raise InvalidInputError(
            f"fact {position}: tombstone must be True or False, got {type(fact.tombstone).__name__}",
            field="extract_facts",
        )
    if fact.date is not None and not isinstance(fact.date, str):
        raise InvalidInputError(
            f"fact {position}: date must be ISO-8601 text or None, got {type(fact.date).__name__}",
            field="extract_facts",
        )
    if not fact.tombstone and (not isinstance(fact.statement, str) or not fact.statement.strip()):
        raise InvalidInputError(
            # Its position, not its subject: subjects are the user's data, and error
            # messages reach logs and span events.
            f"fact {position} has no statement (use tombstone=True to retract)",
            field="extract_facts",
        )
    try:
        parse_fact_date(fact.date)
    except InvalidInputError as exc:
        raise InvalidInputError(f"fact {position}: {exc}", field="extract_facts") from exc
    return fact


@dataclass(frozen=True, slots=True)
class DatedFact:
    """A fact with its effective date (undated facts take the run's date)."""

    fact: Fact
    when: datetime
    order: int


def newest_per_subject(facts: Iterable[Fact], run_time: datetime) -> dict[str, DatedFact]:
    """Newest fact (or tombstone) for each subject key; later position wins ties."""
    winners: dict[str, DatedFact] = {}
    for order, fact in enumerate(facts):
        when = parse_fact_date(fact.date) or run_time
        key = subject_key(fact.subject)
        current = winners.get(key)
        if current is None or (when, order) >= (current.when, current.order):
            winners[key] = DatedFact(fact, when, order)
    return winners


def fact_content(fact: Fact, when: datetime, dated: bool) -> str:
    """The memory text of a fact: its statement, with its date when it has one."""
    if not dated:
        return fact.statement.strip()
    return f"{fact.statement.strip()} (as of {when.date().isoformat()})"


def fact_memory_id(selection: str, key: str, statement: str, when: datetime) -> str:
    """Deterministic id: re-running a consolidation rewrites, never duplicates."""
    raw = "\x1f".join((selection, key, statement.strip(), when.isoformat())).encode("utf-8")
    return "f" + hashlib.blake2b(raw, digest_size=15).hexdigest()


def summary_memory_id(source_ids: Iterable[str]) -> str:
    """Deterministic id of the summary of exactly these sources."""
    raw = "\x1f".join(sorted(source_ids)).encode("utf-8")
    return "s" + hashlib.blake2b(raw, digest_size=15).hexdigest()
