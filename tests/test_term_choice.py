"""Which query terms bring lexical candidates (pure)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Any

from agent_memory.schema.lexical import TermStats, term_token, term_tokens
from agent_memory.schema.term_choice import (
    CANDIDATE_BUDGET,
    DocumentFrequencies,
    candidate_terms,
    lexical_budget,
)


def test_rarest_terms_first_within_the_budget() -> None:
    df = {"user": 900, "elephant": 3, "purple": 40, "zoo": 500}
    assert candidate_terms(df, df, budget=1000) == ("elephant", "purple", "zoo")
    assert candidate_terms(df, df, budget=43) == ("elephant", "purple")
    assert candidate_terms(df, df, budget=2) == ()


def test_unknown_and_damaged_frequencies_count_as_zero() -> None:
    assert candidate_terms(["new", "user"], {"user": 5000, "new": -3}, budget=10) == ("new",)


def test_each_term_once_and_sorted() -> None:
    assert candidate_terms(["b", "a", "b"], {}, budget=0) == ("a", "b")


def test_budget_grows_with_the_candidates_asked_for() -> None:
    assert lexical_budget(50) == CANDIDATE_BUDGET
    assert lexical_budget(1000) == 2000


def test_frequencies_are_learned_per_namespace_and_bounded() -> None:
    known = DocumentFrequencies(capacity=3)
    assert known.unknown("ns", ["a", "b"]) == ["a", "b"]
    known.learn("ns", TermStats(10, 50, {"a": 4}), ["a", "b"])
    assert known.unknown("ns", ["a", "b", "c"]) == ["c"]
    assert known.get("ns", ["a", "b", "c"]) == {"a": 4, "b": 0}
    assert known.unknown("other", ["a"]) == ["a"]
    known.learn("ns", TermStats(10, 50, {"c": 1, "d": 2}), ["c", "d"])
    assert known.unknown("ns", ["a", "b"]) == ["a"]  # least recently used forgotten


def test_term_tokens_are_tag_safe_and_stable() -> None:
    token = term_token("élan")
    assert token.startswith("t") and len(token) == 13 and token[1:].isalnum()
    assert term_token("élan") == token != term_token("elan")
    assert term_tokens(["b", "a", "b"]) == ",".join(sorted({term_token("a"), term_token("b")}))
    assert term_tokens([]) == ""


def test_every_term_in_a_namespace_no_larger_than_the_budget() -> None:
    df = {"user": 900, "zoo": 500}
    assert candidate_terms(df, df, budget=1000, docs=1000) == ("user", "zoo")
    assert candidate_terms(df, df, budget=1000, docs=1001) == ("zoo",)


def test_namespace_size_is_learned_with_the_frequencies() -> None:
    known = DocumentFrequencies()
    assert known.docs("ns") is None
    known.learn("ns", TermStats(42, 50, {}), ["a"])
    assert known.docs("ns") == 42 and known.docs("other") is None


def test_the_chosen_terms_fit_the_room_rarest_held_first() -> None:
    """Every term of a small namespace was chosen, however many: a 400-term query made
    a query string valkey-search 1.2 refused. The room keeps the rarest terms some
    memory holds first, then those none was seen holding (df 0: stale statistics only)."""
    df = {"deploy": 1, "friday": 2, "user": 7}
    terms = [*df, *(f"w{i:03d}" for i in range(400))]  # 400 terms no memory holds
    every = candidate_terms(terms, df, budget=200, docs=10)
    assert len(every) == 403  # without a room: the old choice
    kept = candidate_terms(terms, df, budget=200, docs=10, size=lambda t: 29, room=29 * 5)
    assert kept == ("deploy", "friday", "user", "w000", "w001")
    small = candidate_terms(terms, df, budget=200, docs=10, size=29, room=29 * 2)
    assert small == ("deploy", "friday")  # a size the same for every term
    # within the room the choice is the old one, in a large namespace too
    big = {"rare": 3, "common": 150, "commoner": 190}
    assert candidate_terms(big, big, budget=200, docs=5000, size=len, room=100) == (
        "common",
        "rare",
    )
    assert candidate_terms(big, big, budget=200, docs=5000, size=len, room=9) == ("rare",)
    assert candidate_terms(big, big, budget=200, docs=5000, size=len, room=3) == ()


def test_a_term_another_thread_forgets_while_it_is_read_is_still_returned() -> None:
    """Threads of one blocking store share the frequencies: a term read by one recall
    while another's ``learn`` pushes it out (past the capacity) is no failure."""
    freq = DocumentFrequencies(capacity=2)
    freq.learn("ns", TermStats(docs=5, df={"elephant": 3}), ["elephant"])

    class _OtherThreadBetween(OrderedDict[tuple[str, str], int]):
        """Runs another thread's ``learn`` of two new terms right after a read."""

        def get(self, key: Any, default: Any = None) -> Any:
            value = super().get(key, default)
            other = threading.Thread(
                target=freq.learn,
                args=("ns", TermStats(docs=5, df={"zoo": 1, "purple": 2}), ["zoo", "purple"]),
            )
            other.start()
            other.join()
            return value

    freq._df = _OtherThreadBetween(freq._df)
    assert freq.get("ns", ["elephant"]) == {"elephant": 3}
    assert freq.unknown("ns", ["elephant", "zoo", "purple"]) == ["elephant"]
