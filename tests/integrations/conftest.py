"""Fixtures the framework adapter tests share: each test runs on every server kind of
:mod:`tests.integrations.targets` with both client packages."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from tests.conftest import _Servers
from tests.integrations.targets import KINDS, PACKAGES, Target

TARGETS = [(k, p) for k in KINDS for p in PACKAGES]


@pytest.fixture(params=TARGETS, ids=[f"{k}-{p.name}" for k, p in TARGETS])
def target(request: pytest.FixtureRequest, servers: _Servers) -> Target:
    kind, package = request.param
    return Target(kind, servers.get(kind).url, package)


@pytest.fixture
def client(target: Target) -> Iterator[Any]:
    """A blocking client of the target's package."""
    made = target.sync_client()
    yield made
    made.close()


@pytest.fixture
async def aclient(target: Target) -> AsyncIterator[Any]:
    """An asyncio client of the target's package."""
    made = target.async_client()
    yield made
    await made.aclose()


@pytest.fixture
def raw(target: Target) -> Iterator[Any]:
    """A blocking, decoding valkey client for assertions and foreign (corrupt) writes."""
    import valkey

    made = valkey.Valkey.from_url(target.url, decode_responses=True)
    yield made
    made.close()
