"""docker-compose.yml cannot run here (no docker engine), so check what it declares."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

COMPOSE = Path(__file__).resolve().parent.parent / "docker-compose.yml"


def _services() -> dict[str, Any]:
    data = yaml.safe_load(COMPOSE.read_text())
    services = data["services"]
    assert isinstance(services, dict)
    return services


def test_default_service_is_valkey_bundle_9_1_and_profile_adds_8_1() -> None:
    services = _services()
    default = [s for s in services.values() if not s.get("profiles")]
    profiled = [s for s in services.values() if s.get("profiles")]
    assert [s["image"] for s in default] == ["valkey/valkey-bundle:9.1"]
    assert [s["image"] for s in profiled] == ["valkey/valkey-bundle:8.1"]


def test_every_service_has_healthcheck_and_loopback_only_ports() -> None:
    host_ports = []
    for name, service in _services().items():
        assert "healthcheck" in service, name
        assert service["healthcheck"]["test"][-1] == "PING"
        for mapping in service["ports"]:
            host, port, container = str(mapping).split(":")
            assert host == "127.0.0.1", f"{name} publishes beyond loopback"
            assert container == "6379"
            host_ports.append(int(port))
    assert len(host_ports) == len(set(host_ports))
