"""Prometheus metrics and OpenTelemetry spans, recorded around every public operation.

Metrics go to a registry the user passes (nothing is registered globally); spans go to
the globally configured OpenTelemetry tracer provider (a no-op without an SDK).
"""

from agent_memory.telemetry.core import OperationScope, Telemetry

__all__ = ["OperationScope", "Telemetry"]
