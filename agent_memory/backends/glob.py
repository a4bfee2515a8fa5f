"""Key-name glob matching with the server's semantics (``stringmatchlen`` of Valkey and
Redis), for the in-process keyspace's ``KEYS`` and ``SCAN MATCH``.

Unlike :mod:`fnmatch`, a backslash escapes the next character (``a\\*b`` matches only
``a*b``), inside a class too; ``[^...]`` negates a class; a range may be written either
way round (``[z-a]``); a class left open runs to the end of the pattern. Matching is on
UTF-8 bytes, as the server's: ``?`` is one byte. Pure functions, no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class _Class:
    """One byte of a class: in ``members`` or a range of ``ranges`` (or neither, if
    ``negated``)."""

    members: frozenset[int]
    ranges: tuple[tuple[int, int], ...]
    negated: bool

    def matches(self, byte: int) -> bool:
        hit = byte in self.members or any(low <= byte <= high for low, high in self.ranges)
        return hit != self.negated


_STAR = "*"
_ANY = "?"
_Token = str | int | _Class  # _STAR, _ANY, a literal byte, a class


def _class(pattern: bytes, i: int) -> tuple[_Class, int]:
    """The class opening at ``pattern[i - 1] == '['`` and the index after it."""
    n = len(pattern)
    negated = i < n and pattern[i] == ord("^")
    i += negated
    members: set[int] = set()
    ranges: list[tuple[int, int]] = []
    while i < n:
        c = pattern[i]
        if c == ord("\\") and n - i >= 2:
            members.add(pattern[i + 1])
            i += 2
        elif c == ord("]"):
            i += 1
            break
        elif n - i >= 3 and pattern[i + 1] == ord("-"):
            low, high = sorted((c, pattern[i + 2]))
            ranges.append((low, high))
            i += 3
        else:
            members.add(c)
            i += 1
    return _Class(frozenset(members), tuple(ranges), negated), i


def _tokens(pattern: bytes) -> list[_Token]:
    tokens: list[_Token] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == ord("*"):
            if not tokens or tokens[-1] != _STAR:
                tokens.append(_STAR)
            i += 1
        elif c == ord("?"):
            tokens.append(_ANY)
            i += 1
        elif c == ord("["):
            cls, i = _class(pattern, i + 1)
            tokens.append(cls)
        elif c == ord("\\") and n - i >= 2:
            tokens.append(pattern[i + 1])
            i += 2
        else:
            tokens.append(c)
            i += 1
    return tokens


def _one(token: _Token, byte: int) -> bool:
    if token == _ANY:
        return True
    if isinstance(token, _Class):
        return token.matches(byte)
    return token == byte


def glob_match_bytes(pattern: bytes, name: bytes) -> bool:
    """Whether ``name`` matches the glob ``pattern`` as the server's ``KEYS`` has it.

    Every token but ``*`` matches exactly one byte, so backtracking to the last ``*``
    alone finds a match when there is one. As on the server, an empty name matches only
    an empty pattern.
    """
    if not name:
        return not pattern
    tokens = _tokens(pattern)
    t = s = 0
    star: int | None = None
    star_s = 0
    while s < len(name):
        if t < len(tokens) and tokens[t] == _STAR:
            star, star_s = t, s
            t += 1
        elif t < len(tokens) and _one(tokens[t], name[s]):
            t += 1
            s += 1
        elif star is not None:
            star_s += 1
            s = star_s
            t = star + 1
        else:
            return False
    return all(token == _STAR for token in tokens[t:])


def glob_match(pattern: str, name: str) -> bool:
    """:func:`glob_match_bytes` of text (UTF-8; undecodable bytes kept as surrogates)."""
    return glob_match_bytes(
        pattern.encode("utf-8", "surrogateescape"), name.encode("utf-8", "surrogateescape")
    )
