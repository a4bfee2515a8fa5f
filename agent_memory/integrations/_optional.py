"""Import an optional dependency or raise ``CapabilityError`` naming the extra."""

from __future__ import annotations

import importlib
from types import ModuleType

from agent_memory.errors import CapabilityError


def require(module: str, *, extra: str, package: str | None = None) -> ModuleType:
    """Import ``module`` or raise a :class:`CapabilityError` naming the extra to install.

    ``package`` names the missing distribution in the message (default: the module).

    Raises:
        CapabilityError: the module (or one of its own dependencies) is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise CapabilityError(
            f"{package or repr(module)} is not installed: install the {extra!r} extra "
            f"(pip install 'agent-memory[{extra}]')"
        ) from exc
