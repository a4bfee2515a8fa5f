"""Glob matching of the in-process keyspace: the server's semantics (escapes, classes,
ranges, negation), checked on known cases and confirmed case by case on a real server."""

from __future__ import annotations

import pytest
import redis

from agent_memory.backends.glob import glob_match, glob_match_bytes
from agent_memory.backends.inprocess import InProcessClient
from agent_memory.cache import SyncEmbeddingCache, SyncLlmCache
from tests.conftest import _Servers

# (pattern, name, matches)
CASES: list[tuple[str, str, bool]] = [
    ("*", "abc", True),
    ("a*", "a", True),
    ("a*c", "abbbc", True),
    ("a*c", "abcd", False),
    ("a**c", "ac", True),
    ("*b*", "abc", True),
    ("?", "a", True),
    ("?", "ab", False),
    ("a?c", "abc", True),
    ("a\\*b", "a*b", True),
    ("a\\*b", "axb", False),
    ("a\\*b*", "a*b:1", True),
    ("q\\?", "q?", True),
    ("q\\?", "qx", False),
    ("x\\[1\\]", "x[1]", True),
    ("x\\[1\\]", "x1", False),
    ("a\\\\b", "a\\b", True),
    ("\\a", "a", True),
    ("a\\", "a\\", True),  # a trailing backslash is itself
    ("[abc]", "b", True),
    ("[abc]", "d", False),
    ("[^abc]", "d", True),
    ("[^abc]", "a", False),
    ("[a-c]x", "bx", True),
    ("[c-a]x", "bx", True),  # a range either way round
    ("[a-c]x", "dx", False),
    ("[^a-c]", "d", True),
    ("[\\]]", "]", True),
    ("[\\-]", "-", True),
    ("[\\^]", "^", True),
    ("[]", "a", False),  # an empty class matches nothing
    ("[^]", "a", True),
    ("[ab", "a", True),  # a class left open runs to the end
    ("[ab", "c", False),
    ("h[a-]", "hb", False),  # "a-]" is the range a..] (the server's reading)
    ("h[a-]", "h^", True),
    ("h[a-]x]", "hx", True),  # ... so "x" is in the class and "]" closes it
    ("h[a-]x]", "h^x]", False),
    ("*", "", False),  # an empty name matches only an empty pattern
    ("", "", True),
    ("", "a", False),
    ("é?", "éa", True),
    ("?", "é", False),  # two bytes
    ("??", "é", True),
    ("*x*y*z", "axbyczz", True),
    ("*x*y*z", "axbycz1", False),
]


@pytest.mark.parametrize(("pattern", "name", "expected"), CASES, ids=repr)
def test_known_cases(pattern: str, name: str, expected: bool) -> None:
    assert glob_match(pattern, name) is expected


def test_bytes_that_are_not_utf8() -> None:
    assert glob_match_bytes(b"a?b", b"a\xffb")
    assert glob_match("a?b", b"a\xffb".decode("utf-8", "surrogateescape"))


def test_the_cases_on_a_real_server(servers: _Servers) -> None:
    """Each known case is what the server answers (a key-space of one key per case)."""
    url = servers.get("valkey").url
    raw = redis.Redis.from_url(url, db=9)
    try:
        for pattern, name, expected in CASES:
            if not name:
                continue  # a server stores no key with an empty name in KEYS' reach
            raw.flushdb()
            raw.set(name.encode(), b"1")
            assert (raw.keys(pattern.encode()) == [name.encode()]) is expected, (pattern, name)
    finally:
        raw.flushdb()
        raw.close()


@pytest.mark.parametrize("name", ["plain", "a*b", "x[1]", "q?", "back\\slash"])
def test_clear_of_a_name_with_glob_characters_on_the_in_process_client(name: str) -> None:
    client = InProcessClient()
    other = SyncLlmCache(client, name + "-other")
    llm = SyncLlmCache(client, name)
    params = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    llm.store(params, "yo")
    other.store(params, "yo")
    embeddings = SyncEmbeddingCache(client, name)
    embeddings.put_many("m", ["t"], [[1.0, 2.0]])
    assert llm.clear() == 1 and embeddings.clear() == 1
    assert not llm.check(params).hit
    assert other.check(params).hit  # a name that merely starts the same is untouched
