"""What one command invocation opens: the server, the embedder and the store.

Everything is opened lazily on first use and released by :meth:`Invocation.close`, so
a command that needs no store (``serve``) never builds one, and the embedded server is
started and stopped around the command exactly once.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from typing import Any

EMBEDDERS = ("auto", "minilm", "hashing")
URL_ENV = "AGENT_MEMORY_URL"


class CliError(Exception):
    """A failure outside the library (bad input file, unreadable JSON): exit code 1."""


class UsageError(Exception):
    """Options that parse but do not go together: exit code 2."""


def make_embedder(kind: str, dim: int | None) -> tuple[Callable[[str], Any], str]:
    """The embedder ``--embedder``/``--dim`` ask for and a label describing it.

    Raises:
        CapabilityError: ``minilm`` without the ``local`` extra installed.
    """
    from agent_memory.embedders import choose_embedder

    return choose_embedder(kind, dim)


class Invocation:
    """The resources of one command, opened on demand."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.server: Any = None
        self.embedder_label = ""
        self.status: Any = None
        self._url: str | None = None
        self._store: Any = None

    @property
    def explicit_url(self) -> str | None:
        """``--url``, else ``$AGENT_MEMORY_URL``, else ``None`` (the embedded server)."""
        return self.args.url or os.environ.get(URL_ENV) or None

    def open_embedded(self, port: int | None = None) -> Any:
        """The embedded server of ``--path`` (started unless already running, on ``port``
        when given)."""
        if self.server is None:
            from agent_memory.embedded.server import open_embedded

            try:
                self.server = open_embedded(self.args.path, port=port)
            except OSError as exc:
                raise CliError(f"cannot use --path {self.args.path}: {exc}") from exc
        return self.server

    @property
    def url(self) -> str:
        """The server URL: :attr:`explicit_url`, else the embedded server's (started on
        first use, stopped by :meth:`close` if this process started it)."""
        if self._url is None:
            self._url = self.explicit_url or str(self.open_embedded().url)
        return self._url

    def store(self, **options: Any) -> Any:
        """The :class:`~agent_memory.SyncMemoryStore` of ``--name``, index ensured.

        ``options`` go to the store's constructor (first call only).

        Raises:
            IndexMismatchError: the store was written with an embedder of another width.
            ServerUnavailableError, OperationTimeoutError, CapabilityError.
        """
        if self._store is None:
            from agent_memory import SyncMemoryStore

            embed, self.embedder_label = make_embedder(self.args.embedder, self.args.dim)
            store = SyncMemoryStore.from_url(self.url, name=self.args.name, embed=embed, **options)
            try:
                self.status = store.ensure_index()
            except BaseException:
                store.close()
                raise
            self._store = store
        return self._store

    def scope(self) -> Any:
        """The :class:`~agent_memory.Scope` of the scope options (``None`` when none)."""
        from agent_memory import Scope

        values = {
            "namespace": getattr(self.args, "namespace", None),
            "agent_id": getattr(self.args, "agent", None),
            "thread_id": getattr(self.args, "thread", None),
            "session_id": getattr(self.args, "session", None),
        }
        if all(v is None for v in values.values()):
            return None
        return Scope(**values)

    def where(self) -> str:
        """Where the store lives, for humans: the masked URL or the embedded folder."""
        from agent_memory.core.url_secrets import mask_url

        if self.explicit_url:
            return mask_url(self.explicit_url)
        return f"{self._url or '?'} (embedded, {self.args.path})"

    def close(self) -> None:
        """Close the store, then stop the embedded server if this process started it."""
        store, self._store = self._store, None
        server, self.server = self.server, None
        try:
            if store is not None:
                store.close()
        finally:
            if server is not None:
                server.stop()

    def __enter__(self) -> Invocation:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
