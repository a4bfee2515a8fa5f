"""ACL users and TLS: the store works through ``from_url`` and through a client the
user builds, and the credentials never show up in logs, reprs or error messages."""

from __future__ import annotations

import logging
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_memory import (
    AgentMemoryError,
    InvalidInputError,
    MemoryStore,
    ServerUnavailableError,
    SyncMemoryStore,
)
from agent_memory.cache import LlmCache
from tests.reliability.conftest import Dedicated
from tests.support import TableEmbedder
from tests.test_telemetry import EXPORTER  # installs the in-memory span exporter

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))

import test_tls

USER = "agent-user"
SECRET = "Pa55-w0rd-xyzzy-Secret"
WRONG = "Wr0ng-Guess-plugh-Secret"


def _chain(exc: BaseException | None) -> Iterator[BaseException]:
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield exc
        exc = exc.__cause__ or exc.__context__


def assert_no_secret(*texts: object) -> None:
    for text in texts:
        for secret in (SECRET, WRONG):
            assert secret not in str(text), f"secret leaked in: {str(text)[:200]}"


def assert_error_clean(exc: BaseException) -> None:
    for link in _chain(exc):
        assert_no_secret(str(link), repr(link), link.args)


@pytest.fixture
def acl_server(dedicated: Dedicated, tmp_path: Path) -> Iterator[int]:
    server = dedicated.start("valkey", tmp_path / "acl")
    import valkey

    admin = valkey.Valkey(host="127.0.0.1", port=server.port)
    admin.execute_command("ACL", "SETUSER", USER, "on", f">{SECRET}", "~*", "&*", "+@all")
    admin.execute_command("ACL", "SETUSER", "default", "off")  # every client must log in
    admin.close()
    yield server.port


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> test_tls.Certificates:
    return test_tls.make_certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture
def tls_server(
    certificates: test_tls.Certificates, tmp_path: Path, dedicated: Dedicated
) -> Iterator[int]:
    server = test_tls.start_tls(
        tmp_path / "tls", certificates, extra_args=("--user", USER, "on", f">{SECRET}", "~*",
                                                    "&*", "+@all", "--user", "default", "off")
    )  # fmt: skip
    dedicated.started.append(server)
    yield server.port


async def _exercise(store: Any) -> None:
    memory_id = await store.remember("the user likes tea", tags=["drinks"])
    hits = await store.recall("the user likes tea", k=1)
    assert [h.item.id for h in hits] == [memory_id]
    assert await store.forget(memory_id) is True
    assert_no_secret(repr(store))


@pytest.mark.parametrize("scheme", ["redis", "valkey"])
async def test_acl_user_through_from_url(
    acl_server: int, scheme: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    EXPORTER.clear()
    url = f"{scheme}://{USER}:{SECRET}@127.0.0.1:{acl_server}"
    store = MemoryStore.from_url(url, name=f"a{uuid.uuid4().hex[:8]}", embed=TableEmbedder())
    await _exercise(store)
    await store.close()
    bad = MemoryStore.from_url(
        f"{scheme}://{USER}:{WRONG}@127.0.0.1:{acl_server}", name="a", embed=TableEmbedder()
    )
    with pytest.raises(ServerUnavailableError) as info:
        await bad.remember("never written")
    assert_error_clean(info.value)
    assert_no_secret(repr(bad))
    await bad.close()
    anonymous = MemoryStore.from_url(f"{scheme}://127.0.0.1:{acl_server}", name="a",
                                     embed=TableEmbedder())  # fmt: skip
    with pytest.raises(AgentMemoryError) as denied:
        await anonymous.remember("never written")
    assert_error_clean(denied.value)
    await anonymous.close()
    with pytest.raises(InvalidInputError) as malformed:
        MemoryStore.from_url(f"{scheme}://{USER}:{SECRET}@127.0.0.1:port", name="a",
                             embed=TableEmbedder())  # fmt: skip
    assert_error_clean(malformed.value)
    assert_no_secret(caplog.text, *(r.getMessage() for r in caplog.records))
    spans = EXPORTER.get_finished_spans()
    assert spans  # the operations above were traced...
    for span in spans:  # ...and no span name, attribute or event carries the secret
        assert_no_secret(span.name, *(str(v) for v in (span.attributes or {}).values()))
        for event in span.events:
            assert_no_secret(event.name, *(str(v) for v in (event.attributes or {}).values()))


async def test_acl_user_through_clients_the_user_builds(
    acl_server: int, caplog: pytest.LogCaptureFixture
) -> None:
    import redis
    import valkey.asyncio

    caplog.set_level(logging.DEBUG)
    client = valkey.asyncio.Valkey(
        host="127.0.0.1", port=acl_server, username=USER, password=SECRET, protocol=3
    )
    await _exercise(MemoryStore(client, f"a{uuid.uuid4().hex[:8]}", TableEmbedder()))
    await client.aclose()
    sync_client = redis.Redis(
        host="127.0.0.1", port=acl_server, username=USER, password=SECRET, decode_responses=True
    )
    store = SyncMemoryStore(sync_client, f"a{uuid.uuid4().hex[:8]}", TableEmbedder())
    memory_id = store.remember("sync works too")
    assert store.get(memory_id) is not None
    assert_no_secret(repr(store))
    sync_client.close()
    cache_client = valkey.asyncio.Valkey(host="127.0.0.1", port=acl_server, username=USER,
                                         password=WRONG)  # fmt: skip
    cache = LlmCache(cache_client, "c")
    with pytest.raises(ServerUnavailableError) as info:
        await cache.check({"model": "m", "messages": []})
    assert_error_clean(info.value)
    await cache_client.aclose()
    assert_no_secret(caplog.text)


@pytest.mark.parametrize("scheme", ["rediss", "valkeys"])
async def test_tls_through_from_url(
    tls_server: int, certificates: test_tls.Certificates, scheme: str,
    caplog: pytest.LogCaptureFixture,
) -> None:  # fmt: skip
    caplog.set_level(logging.DEBUG)
    url = f"{scheme}://{USER}:{SECRET}@127.0.0.1:{tls_server}"
    store = MemoryStore.from_url(url, name=f"s{uuid.uuid4().hex[:8]}", embed=TableEmbedder(),
                                 client_ssl_ca_certs=str(certificates.ca))  # fmt: skip
    await _exercise(store)
    await store.close()
    # A server certificate the client cannot verify is refused, with a clean error.
    untrusted = MemoryStore.from_url(url, name="s", embed=TableEmbedder())
    with pytest.raises(ServerUnavailableError) as info:
        await untrusted.remember("never written")
    assert "certificate" in str(info.value).lower()
    assert_error_clean(info.value)
    await untrusted.close()
    # Plain TCP to a TLS-only port fails cleanly too.
    plain = MemoryStore.from_url(
        f"redis://{USER}:{SECRET}@127.0.0.1:{tls_server}", name="s", embed=TableEmbedder(),
        client_socket_timeout=2.0,
    )  # fmt: skip
    with pytest.raises((ServerUnavailableError, AgentMemoryError)) as plain_info:
        await plain.remember("never written")
    assert_error_clean(plain_info.value)
    await plain.close()
    assert_no_secret(caplog.text)


def test_tls_through_a_client_the_user_builds(
    tls_server: int, certificates: test_tls.Certificates
) -> None:
    import valkey

    client = valkey.Valkey(
        host="127.0.0.1", port=tls_server, ssl=True, ssl_ca_certs=str(certificates.ca),
        ssl_certfile=str(certificates.client_cert), ssl_keyfile=str(certificates.client_key),
        username=USER, password=SECRET,
    )  # fmt: skip
    store = SyncMemoryStore(client, f"s{uuid.uuid4().hex[:8]}", TableEmbedder())
    memory_id = store.remember("over TLS")
    assert store.get(memory_id) is not None
    assert store.ensure_index().backend == "portable"
    client.close()
