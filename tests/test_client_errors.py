"""Client-package exceptions become the library's, and only the cluster client's own
stumbles during an outage count as unavailability."""

from __future__ import annotations

import math
from typing import Any

import pytest

from agent_memory.core.clients import AsyncExecutor, SyncExecutor, map_client_error
from agent_memory.core.effects import Batch, Command
from agent_memory.errors import (
    CapabilityError,
    ServerResponseError,
    ServerUnavailableError,
    WrongTypeError,
)


def _raised_in(module: str, exc_type: type[Exception]) -> Exception:
    code = compile("def fail(kind):\n    raise kind('boom')\n", f"<{module}>", "exec")
    namespace: dict[str, object] = {"__name__": module}
    exec(code, namespace)  # defines a function that lives in ``module``
    try:
        namespace["fail"](exc_type)  # type: ignore[operator]
    except Exception as exc:  # noqa: BLE001 - the exception under test
        return exc
    raise AssertionError("unreachable")


@pytest.mark.parametrize("module", ["valkey.asyncio.cluster", "redis.cluster"])
@pytest.mark.parametrize("kind", [AttributeError, KeyError, TypeError])
def test_a_cluster_client_tripping_over_a_lost_node_is_unavailability(
    module: str, kind: type[Exception]
) -> None:
    mapped = map_client_error(_raised_in(module, kind), command="GET")
    assert isinstance(mapped, ServerUnavailableError) and "lost a node" in str(mapped)


@pytest.mark.parametrize("module", ["agent_memory.store.ops.read", "valkey.client"])
def test_the_same_error_elsewhere_is_not_hidden(module: str) -> None:
    mapped = map_client_error(_raised_in(module, AttributeError), command="GET")
    assert type(mapped) is ServerResponseError and "unexpected client error" in str(mapped)


@pytest.mark.parametrize("package", ["valkey", "redis"])
def test_a_wrong_type_reply_is_a_wrong_type_error(package: str) -> None:
    exceptions = pytest.importorskip(f"{package}.exceptions")
    wrong = exceptions.ResponseError(
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    )
    mapped = map_client_error(wrong, command="HMGET")
    assert isinstance(mapped, WrongTypeError) and mapped.command == "HMGET"
    other = map_client_error(exceptions.ResponseError("ERR syntax error"), command="HMGET")
    assert type(other) is ServerResponseError


@pytest.mark.parametrize(
    ("package", "name"), [("valkey", "ValkeyClusterException"), ("redis", "RedisClusterException")]
)
def test_a_cluster_with_no_reachable_node_is_unavailability(package: str, name: str) -> None:
    exceptions = pytest.importorskip(f"{package}.exceptions")
    kind = getattr(exceptions, name)
    lost = kind("Valkey Cluster cannot be connected. Please provide at least one reachable node")
    assert isinstance(map_client_error(lost, command="HINCRBY"), ServerUnavailableError)
    misuse = kind("No way to dispatch this command to Valkey Cluster. Missing key.")
    assert type(map_client_error(misuse, command="FT.SEARCH")) is ServerResponseError


@pytest.mark.parametrize("package", ["valkey", "redis"])
async def test_an_atomic_batch_is_refused_only_where_the_cluster_client_has_no_transactions(
    package: str, cluster_url: str
) -> None:
    """valkey-py's cluster clients have no MULTI/EXEC and redis-py's asyncio one runs it in
    threads on event loops of their own: an atomic batch is a clear CapabilityError
    before anything is sent; redis-py's blocking cluster client runs it on the slot's
    node."""
    module = pytest.importorskip(package)
    amodule = pytest.importorskip(f"{package}.asyncio")
    sync_cls = module.ValkeyCluster if package == "valkey" else module.RedisCluster
    async_cls = amodule.ValkeyCluster if package == "valkey" else amodule.RedisCluster
    key = f"{{atomic{package}}}:k"
    steps = Batch((Command(("SET", key, "1")), Command(("INCR", key))), atomic=True)
    sync_client = sync_cls.from_url(cluster_url, decode_responses=True)
    async_client = async_cls.from_url(cluster_url, decode_responses=True)
    try:
        sync_client.delete(key)
        with pytest.raises(CapabilityError, match="MULTI/EXEC"):
            await AsyncExecutor(async_client).batch(steps)
        if package == "valkey":
            with pytest.raises(CapabilityError, match="MULTI/EXEC"):
                SyncExecutor(sync_client).batch(steps)
            assert sync_client.get(key) is None  # nothing was sent
        else:
            assert SyncExecutor(sync_client).batch(steps)[1] == 2
            assert sync_client.get(key) == "2"
    finally:
        sync_client.delete(key)
        sync_client.close()
        await async_client.aclose()


_BAD_CLIENT_OPTIONS = [
    ("rediss://user:hunter2@127.0.0.1:1?ssl_cert_reqs=bogus", {}, "url"),
    ("valkeys://user:hunter2@127.0.0.1:1", {"client_ssl_cert_reqs": "bogus"}, "url"),
    ("redis://user:hunter2@127.0.0.1:1", {"client_protocol": 4}, "url"),
    ("redis://user:hunter2@127.0.0.1:1", {"client_retry": "no"}, "client_retry"),
    ("redis://127.0.0.1:1", {"client_socket_timeout": "abc"}, "client_socket_timeout"),
    ("redis://127.0.0.1:1", {"client_socket_timeout": 0}, "client_socket_timeout"),
    ("redis://127.0.0.1:1", {"client_socket_timeout": -1}, "client_socket_timeout"),
    ("redis://127.0.0.1:1", {"client_socket_timeout": math.inf}, "client_socket_timeout"),
    ("redis://127.0.0.1:1", {"client_socket_timeout": 10**400}, "client_socket_timeout"),
    (
        "redis://127.0.0.1:1",
        {"client_socket_connect_timeout": "5"},
        "client_socket_connect_timeout",
    ),
    ("redis://127.0.0.1:1", {"client_health_check_interval": "x"}, "client_health_check_interval"),
    ("redis://127.0.0.1:1", {"client_health_check_interval": -1}, "client_health_check_interval"),
    ("redis://127.0.0.1:1?socket_timeout=-1", {}, "url"),
    # a database that is not a number was ignored (database 0 served instead)
    ("redis://user:hunter2@127.0.0.1:1/abc", {}, "url"),
    ("valkey://user:hunter2@127.0.0.1:1/1x", {}, "url"),
    # failed only at the first command, as ServerUnavailableError
    ("redis://user:hunter2@h\udc80st:1", {}, "url"),
    ("redis://user:hunter2@h\x00st:1", {}, "url"),
]


@pytest.mark.parametrize(("url", "options", "field"), _BAD_CLIENT_OPTIONS)
@pytest.mark.parametrize("cls", ["AgentMemory", "SyncAgentMemory", "MemoryStore"])
def test_a_bad_client_option_is_refused_by_from_url(
    cls: str, url: str, options: dict[str, Any], field: str
) -> None:
    """The client's own exceptions (RedisError, ValkeyError, its ConnectionError, an
    AttributeError) escaped, and ill-typed timeouts failed only at the first command."""
    import agent_memory
    from agent_memory.errors import InvalidInputError
    from tests.support import TableEmbedder

    with pytest.raises(InvalidInputError) as info:
        getattr(agent_memory, cls).from_url(url, name="n", embed=TableEmbedder(), **options)
    assert info.value.field == field
    assert "hunter2" not in str(info.value)


def test_client_timeouts_are_checked_and_good_ones_taken() -> None:
    """None (no bound), positive numbers and a health-check interval of 0 (off) are
    taken as given; an ill-typed one was also taken, and failed at the first command."""
    from agent_memory import SyncMemoryStore
    from agent_memory.errors import InvalidInputError
    from tests.support import TableEmbedder

    for options in (
        {"client_socket_timeout": None},
        {"client_socket_timeout": 2, "client_socket_connect_timeout": 0.5},
        {"client_health_check_interval": 0},
        {"client_health_check_interval": 30},
    ):
        store = SyncMemoryStore.from_url(
            "redis://127.0.0.1:1", name="n", embed=TableEmbedder(), **options
        )
        kwargs = store._client.connection_pool.connection_kwargs
        for option, value in options.items():
            assert kwargs[option.removeprefix("client_")] == value
        store.close()
    with pytest.raises(InvalidInputError, match="health_check_interval"):
        SyncMemoryStore.from_url(
            "redis://127.0.0.1:1", name="n", embed=TableEmbedder(), client_health_check_interval="x"
        )
