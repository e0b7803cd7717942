"""Private service processes for tests, benchmarks and the demo (docs/design-rules.md rule 3).

Each service runs on a free loopback port with its own temporary directory and is stopped
when the context exits, so nothing touches the machine's shared instances.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from sluiceway.ports import free_port

__all__ = [
    "PostgresServer",
    "PrometheusServer",
    "PubSubEmulator",
    "RedisServer",
    "ServiceUnavailable",
    "private_postgres",
    "private_prometheus",
    "private_pubsub_emulator",
    "private_redis",
    "pubsub_emulator_installed",
    "services_required",
]

_START_TIMEOUT_S = 20.0


class ServiceUnavailable(RuntimeError):
    """The binary for a service is not installed."""


def services_required() -> bool:
    """True where a missing service must fail rather than skip (CI)."""
    return os.environ.get("SLUICEWAY_REQUIRE_SERVICES", "") not in ("", "0")


@dataclass(frozen=True)
class RedisServer:
    host: str
    port: int
    scheme: str = "redis"  # rediss: the port speaks TLS only
    folder: str = ""  # its working directory (a sentinel's config file lives there)

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}/0"


@dataclass(frozen=True)
class PrometheusServer:
    host: str
    port: int
    config_file: Path

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def reload(self) -> None:
        """Ask Prometheus to re-read its config file (needs the lifecycle API, which we enable)."""
        req = urllib.request.Request(f"{self.url}/-/reload", method="POST")
        with urllib.request.urlopen(req, timeout=10) as resp:
            resp.read()


def _binary(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ServiceUnavailable(f"{name} is not installed (apt-get install {name})")
    return path


def _wait_until(
    check: Callable[[], bool],
    proc: subprocess.Popen[bytes],
    what: str,
    timeout: float = _START_TIMEOUT_S,
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with code {proc.returncode} during start-up")
        if check():
            return
        time.sleep(0.02)
    raise RuntimeError(f"{what} did not become ready within {timeout} s")


def _tcp_open(host: str, port: int) -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.2):
        return True
    return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@contextlib.contextmanager
def private_redis(
    *,
    keyspace_events: str = "",
    args: Sequence[str] = (),
    tls: bool = False,
    sentinel_config: str = "",
) -> Iterator[RedisServer]:
    """A throwaway redis-server on a free loopback port; ``keyspace_events`` as Redis spells it.

    ``args`` are more server options (``--requirepass``, ``--tls-cert-file``, ...); with ``tls``
    the port speaks TLS only (give the TLS files in ``args``); a ``sentinel_config`` (its
    ``sentinel monitor`` lines) starts a sentinel instead of a server.
    """
    binary = _binary("redis-server")
    with tempfile.TemporaryDirectory(prefix="sluiceway-redis-") as tmp:
        port = free_port()
        head = [binary]
        if sentinel_config:
            Path(tmp, "sentinel.conf").write_text(sentinel_config, encoding="utf-8")
            head += [f"{tmp}/sentinel.conf", "--sentinel"]
        ports = ["--port", "0", "--tls-port", str(port)] if tls else ["--port", str(port)]
        head += [*ports, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", tmp]
        head += ["--daemonize", "no", "--notify-keyspace-events", keyspace_events]
        head += ["--logfile", f"{tmp}/redis.log", *args]
        proc = subprocess.Popen(head, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            _wait_until(lambda: _tcp_open("127.0.0.1", port), proc, "redis-server")
            yield RedisServer("127.0.0.1", port, "rediss" if tls else "redis", tmp)
        finally:
            _stop(proc)


def _http_ok(url: str) -> bool:
    with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=0.5) as resp:
        return bool(resp.status == 200)
    return False


@contextlib.contextmanager
def private_prometheus(
    scrape_targets: list[str] | None = None,
    *,
    scrape_interval: str = "1s",
    target_labels: Mapping[str, str] | None = None,
) -> Iterator[PrometheusServer]:
    """A throwaway Prometheus scraping ``host:port`` targets; its TSDB lives in a temp dir.

    ``target_labels`` are added to every scraped series (as a PodMonitor adds
    ``inference_pool``)."""
    binary = _binary("prometheus")
    with tempfile.TemporaryDirectory(prefix="sluiceway-prom-") as tmp:
        config = Path(tmp) / "prometheus.yml"
        text = _prometheus_config(scrape_targets or [], scrape_interval, target_labels or {})
        config.write_text(text)
        port = free_port()
        args = [
            binary,
            f"--config.file={config}",
            f"--storage.tsdb.path={tmp}/data",
            f"--web.listen-address=127.0.0.1:{port}",
            "--web.enable-lifecycle",
            "--log.level=warn",
        ]
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}/-/ready"
            _wait_until(lambda: _http_ok(url), proc, "prometheus")
            yield PrometheusServer("127.0.0.1", port, config)
        finally:
            _stop(proc)


def _prometheus_config(targets: list[str], interval: str, labels: Mapping[str, str]) -> str:
    quoted = ", ".join(f"'{t}'" for t in targets)
    label_map = ", ".join(f"{k}: '{v}'" for k, v in labels.items())
    return (
        "global:\n"
        f"  scrape_interval: {interval}\n"
        f"  evaluation_interval: {interval}\n"
        "scrape_configs:\n"
        "  - job_name: sluiceway\n"
        f"    static_configs:\n      - targets: [{quoted}]\n"
        f"        labels: {{{label_map}}}\n"
    )


@dataclass(frozen=True)
class PubSubEmulator:
    """A private Google Cloud Pub/Sub emulator; clients find it through ``host_port``."""

    host: str
    port: int

    @property
    def host_port(self) -> str:
        """The value of ``PUBSUB_EMULATOR_HOST`` for clients of this emulator."""
        return f"{self.host}:{self.port}"


def _gcloud_sdk_root() -> Path | None:
    gcloud = shutil.which("gcloud")
    if gcloud is None:
        return None
    return Path(os.path.realpath(gcloud)).parent.parent


def pubsub_emulator_installed() -> bool:
    """True where gcloud and its Pub/Sub emulator component are both installed."""
    root = _gcloud_sdk_root()
    return root is not None and (root / "platform" / "pubsub-emulator").is_dir()


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    # gcloud starts the emulator (a JVM) as a child: stop the whole process group it leads.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@contextlib.contextmanager
def private_pubsub_emulator() -> Iterator[PubSubEmulator]:
    """A throwaway Pub/Sub emulator (``gcloud beta emulators pubsub start``) on a free loopback
    port, with its data and gcloud's own configuration in a temporary directory."""
    if not pubsub_emulator_installed():
        raise ServiceUnavailable(
            "the Pub/Sub emulator is not installed (gcloud with google-cloud-cli-pubsub-emulator)"
        )
    gcloud = _binary("gcloud")
    with tempfile.TemporaryDirectory(prefix="sluiceway-pubsub-") as tmp:
        port = free_port()
        Path(tmp, "data").mkdir()
        args = [
            gcloud,
            "beta",
            "emulators",
            "pubsub",
            "start",
            f"--host-port=127.0.0.1:{port}",
            f"--data-dir={tmp}/data",
            "--quiet",
        ]
        env = {**os.environ, "CLOUDSDK_CONFIG": f"{tmp}/gcloud"}
        with open(f"{tmp}/emulator.log", "wb") as out:
            proc = subprocess.Popen(
                args, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        try:
            ready = f"http://127.0.0.1:{port}/"
            _wait_until(lambda: _http_ok(ready), proc, "pubsub emulator", 60.0)
            yield PubSubEmulator("127.0.0.1", port)
        finally:
            _stop_group(proc)


@dataclass(frozen=True)
class PostgresServer:
    host: str
    port: int
    data_dir: Path
    user: str = "postgres"

    def dsn(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@{self.host}:{self.port}/{database}"

    @property
    def url(self) -> str:
        return self.dsn()


_PG_USER = "postgres"


def _postgres_bin_dir() -> Path:
    """The newest ``/usr/lib/postgresql/<version>/bin`` holding initdb and postgres."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    found = [d for d in found if (d / "postgres").exists()]
    if not found:
        raise ServiceUnavailable(
            "PostgreSQL server binaries are not installed (apt-get install postgresql)"
        )
    return max(found, key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0)


def _as_postgres_user(args: list[str]) -> list[str]:
    """initdb refuses to run as root: run as the ``postgres`` system user when we are root."""
    if os.geteuid() != 0:
        return args
    if shutil.which("runuser") is None:
        raise ServiceUnavailable("runuser is needed to start PostgreSQL as root")
    return ["runuser", "-u", _PG_USER, "--", *args]


def _owned_temp_dir() -> Path:
    tmp = Path(tempfile.mkdtemp(prefix="sluiceway-pg-"))
    if os.geteuid() == 0:
        try:
            entry = pwd.getpwnam(_PG_USER)
        except KeyError as exc:
            shutil.rmtree(tmp)
            raise ServiceUnavailable(f"no {_PG_USER!r} system user to run PostgreSQL") from exc
        os.chown(tmp, entry.pw_uid, entry.pw_gid)
    return tmp


def _pg_ready(bin_dir: Path, port: int) -> bool:
    probe = [str(bin_dir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(port)]
    return subprocess.run(probe, check=False, capture_output=True).returncode == 0


def _stop_postgres(proc: subprocess.Popen[bytes], data: Path) -> None:
    """Fast shutdown: SIGINT to the postmaster (its pid is the first line of postmaster.pid)."""
    with contextlib.suppress(OSError, ValueError):
        pid = int((data / "postmaster.pid").read_text().split()[0])
        os.kill(pid, signal.SIGINT)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        _stop(proc)


def _initdb(bin_dir: Path, data: Path) -> None:
    args = [str(bin_dir / "initdb"), "-D", str(data), "-U", _PG_USER, "-A", "trust"]
    args += ["-E", "UTF8", "--no-sync", "--no-instructions"]
    done = subprocess.run(_as_postgres_user(args), check=False, capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"initdb failed: {done.stderr.decode(errors='replace')[-800:]}")


@contextlib.contextmanager
def private_postgres() -> Iterator[PostgresServer]:
    """A throwaway PostgreSQL cluster (trust auth, fsync off) on a free loopback port.

    Runs as the ``postgres`` system user when started by root. Missing binaries raise
    :class:`ServiceUnavailable`; a server that is installed but does not start raises
    RuntimeError (always a failure, never a skip).
    """
    bin_dir = _postgres_bin_dir()
    tmp = _owned_temp_dir()
    try:
        data = tmp / "data"
        _initdb(bin_dir, data)
        port = free_port()
        args = [str(bin_dir / "postgres"), "-D", str(data), "-p", str(port)]
        args += ["-h", "127.0.0.1", "-k", str(tmp), "-F", "-c", "max_connections=200"]
        args += ["-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        log = (tmp / "postgres.log").open("wb")
        proc = subprocess.Popen(_as_postgres_user(args), stdout=log, stderr=log)
        try:
            _wait_until(lambda: _pg_ready(bin_dir, port), proc, "postgres")
            yield PostgresServer("127.0.0.1", port, data)
        finally:
            _stop_postgres(proc, data)
            log.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
