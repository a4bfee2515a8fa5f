#!/usr/bin/env python3
"""A TLS-only Valkey server for the test suite, with a throw-away CA made by ``openssl``.

:func:`make_certificates` writes a self-signed CA and a server certificate for
``127.0.0.1``/``localhost`` (and a client certificate, for servers that require one);
:func:`start_tls` starts the Valkey 8.0 of ``scripts/tls_valkey.py`` (TLS-enabled) with only a TLS
port open (``--port 0 --tls-port N``) and waits until a TLS client gets ``PONG``.

Usage:
  python scripts/test_tls.py DIR   # writes the files, starts a server, prints its URL
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import tls_valkey

from agent_memory.embedded import ServerProcess, free_port
from agent_memory.embedded.launcher import wait_until_ready


@dataclass(frozen=True)
class Certificates:
    ca: Path
    cert: Path
    key: Path
    client_cert: Path
    client_key: Path


def _openssl(*args: str, cwd: Path) -> None:
    done = subprocess.run(
        ["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False, timeout=60
    )
    if done.returncode != 0:
        raise RuntimeError(f"openssl {' '.join(args[:2])} failed:\n{done.stderr}")


def make_certificates(folder: Path) -> Certificates:
    """A CA, a server certificate (SAN 127.0.0.1, localhost) and a client certificate."""
    folder.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-keyout", "ca.key", "-out", "ca.crt", "-subj", "/CN=agent-memory test CA",
             cwd=folder)  # fmt: skip
    (folder / "san.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n"
    )
    for name in ("server", "client"):
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
                 "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=folder)  # fmt: skip
        _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
                 "-CAcreateserial", "-days", "2", "-out", f"{name}.crt",
                 "-extfile", "san.ext", cwd=folder)  # fmt: skip
    return Certificates(
        folder / "ca.crt",
        folder / "server.crt",
        folder / "server.key",
        folder / "client.crt",
        folder / "client.key",
    )


def _tls_ping(port: int, certs: Certificates) -> bool:
    context = ssl.create_default_context(cafile=str(certs.ca))
    context.load_cert_chain(str(certs.client_cert), str(certs.client_key))
    try:
        with (
            socket.create_connection(("127.0.0.1", port), timeout=0.5) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as sock,
        ):
            sock.sendall(b"*1\r\n$4\r\nPING\r\n")
            return sock.recv(64).startswith((b"+PONG", b"-NOAUTH"))  # it answers
    except OSError:
        return False


def start_tls(
    data_dir: Path,
    certs: Certificates,
    *,
    auth_clients: str = "no",
    extra_args: tuple[str, ...] = (),
    timeout: float = 20.0,
) -> ServerProcess:
    """Start Valkey with only a TLS port; raises ServerUnavailableError with its log on failure."""
    binary = tls_valkey.tls_valkey_binary()
    data_dir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log_path = data_dir / f"server-{port}.log"
    args = [
        str(binary.path), "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
        "--dir", str(data_dir), "--logfile", str(log_path), "--save", "",
        "--appendonly", "no", "--tls-cert-file", str(certs.cert),
        "--tls-key-file", str(certs.key), "--tls-ca-cert-file", str(certs.ca),
        "--tls-auth-clients", auth_clients, *extra_args,
    ]  # fmt: skip
    process = subprocess.Popen(
        args,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=binary.environment(),
        start_new_session=True,
    )
    server = ServerProcess(binary, port, process, log_path, data_dir, None)
    return wait_until_ready(server, lambda: _tls_ping(port, certs), timeout)


def main(argv: list[str]) -> int:
    folder = Path(argv[1]) if len(argv) > 1 else Path("agent-memory-tls")
    certs = make_certificates(folder)
    server = start_tls(folder / "data", certs)
    print(f"rediss://127.0.0.1:{server.port}  (CA: {certs.ca}); Ctrl-C stops it")
    try:
        server.process.wait()
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
