"""Import an optional dependency or raise ``CapabilityError`` naming the extra."""

from __future__ import annotations

import importlib
from types import ModuleType

from agent_memory.errors import CapabilityError


def require(module: str, *, extra: str) -> ModuleType:
    """Import ``module`` or raise a :class:`CapabilityError` naming the extra to install.

    Raises:
        CapabilityError: the module (or one of its own dependencies) is not installed.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise CapabilityError(
            f"{module!r} is not installed: install the {extra!r} extra "
            f"(pip install 'agent-memory[{extra}]')"
        ) from exc
