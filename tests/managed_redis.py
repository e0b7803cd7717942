"""Redis as a managed service runs it, privately on loopback: a private CA and TLS files made
at test time (never committed), TLS and mutual-TLS servers, and three sentinels watching a
master. Servers start through ``private_redis`` (the conftest's ``redis_factory``)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import pytest

from sluiceway.localservices import RedisServer, services_required

SERVER_NAME = "redis.internal"  # the name the server's certificate carries, beside 127.0.0.1


@dataclass(frozen=True)
class Certs:
    """A private CA, a server certificate (``SERVER_NAME`` and 127.0.0.1) and a client one."""

    ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path

    def server_args(self, *, clients: bool) -> list[str]:
        """redis-server options serving TLS with these files; ``clients``: mutual TLS."""
        return [
            "--tls-cert-file", str(self.server_cert), "--tls-key-file", str(self.server_key),
            "--tls-ca-cert-file", str(self.ca), "--tls-auth-clients", "yes" if clients else "no",
        ]  # fmt: skip

    def query(self, *, client: bool = False) -> str:
        """The URL options trusting the CA (and presenting the client certificate)."""
        options = f"ssl_ca_certs={quote(str(self.ca))}"
        if client:
            options += f"&ssl_certfile={quote(str(self.client_cert))}"
            options += f"&ssl_keyfile={quote(str(self.client_key))}"
        return options


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def _signed(name: str, cn: str, san: str, folder: Path) -> None:
    _openssl("req", "-new", "-nodes", "-newkey", "ec", "-pkeyopt",
             "ec_paramgen_curve:prime256v1", "-keyout", f"{name}.key", "-out", f"{name}.csr",
             "-subj", f"/CN={cn}", cwd=folder)  # fmt: skip
    (folder / f"{name}.ext").write_text(f"subjectAltName={san}\n", encoding="utf-8")
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", f"{name}.crt", "-days", "2",
             "-extfile", f"{name}.ext", cwd=folder)  # fmt: skip


def make_certs(folder: Path) -> Certs:
    """A fresh private CA and the certificates it signs, in ``folder``."""
    if shutil.which("openssl") is None:
        if services_required():
            raise AssertionError("openssl not found")
        pytest.skip("openssl not found")
    folder.mkdir(parents=True, exist_ok=True)
    _openssl("req", "-x509", "-new", "-nodes", "-newkey", "ec",
             "-pkeyopt", "ec_paramgen_curve:prime256v1", "-keyout", "ca.key", "-out", "ca.crt",
             "-days", "2", "-subj", "/CN=sluiceway test CA", cwd=folder)  # fmt: skip
    _signed("server", SERVER_NAME, f"DNS:{SERVER_NAME},IP:127.0.0.1", folder)
    _signed("client", "sluiceway-client", "DNS:sluiceway-client", folder)
    return Certs(
        folder / "ca.crt",
        folder / "server.crt",
        folder / "server.key",
        folder / "client.crt",
        folder / "client.key",
    )


@dataclass(frozen=True)
class SentinelSet:
    """A master and the three sentinels that watch it as ``master_name``."""

    master: RedisServer
    sentinels: tuple[RedisServer, ...]
    master_name: str = "mymaster"

    @property
    def hosts(self) -> str:
        return ",".join(f"{s.host}:{s.port}" for s in self.sentinels)

    def url(self, *, userinfo: str = "", query: str = "", tls: bool = False) -> str:
        """The ``redis+sentinel://`` address of the master (``userinfo``: ``user:pass@``)."""
        scheme = "rediss+sentinel" if tls else "redis+sentinel"
        tail = f"?{query}" if query else ""
        return f"{scheme}://{userinfo}{self.hosts}/{self.master_name}/0{tail}"


def start_sentinels(
    start: Callable[..., RedisServer],
    master: RedisServer,
    *,
    master_password: str = "",
    sentinel_args: list[str] | None = None,
    tls: bool = False,
) -> SentinelSet:
    """Three sentinels (``start`` is the ``redis_factory``) watching ``master``, quorum 2;
    ``tls``: they listen on TLS only (give the TLS files in ``sentinel_args``)."""
    config = f"sentinel monitor mymaster {master.host} {master.port} 2\n"
    config += "sentinel down-after-milliseconds mymaster 1000\n"
    config += "sentinel failover-timeout mymaster 5000\n"
    if master_password:
        config += f"sentinel auth-pass mymaster {master_password}\n"
    sentinels = tuple(
        start(sentinel_config=config, args=list(sentinel_args or []), tls=tls) for _ in range(3)
    )
    return SentinelSet(master, sentinels)
