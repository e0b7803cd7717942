"""Port announcements (docs/design-rules.md rule 2): ``listening <name> <url>`` lines and
``--ports-file``."""

from __future__ import annotations

import errno
import json
import os
import socket
import sys
from pathlib import Path

from sluiceway.errors import ConfigError

__all__ = ["PortAnnouncer", "check_port_free", "free_port"]


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (for tests and child processes)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def check_port_free(host: str, port: int, *, flag: str) -> None:
    """ConfigError naming ``flag`` when ``host:port`` cannot be bound (in use, not allowed).

    Checked before a server starts, so the user sees one line instead of a traceback from deep
    inside the server. Port 0 (pick a free one) always passes.
    """
    if port == 0:
        return
    if not 0 < port <= 65535:
        raise ConfigError(f"port {port} is out of range (1-65535)", field=flag)
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            reason = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be bound: {exc}"
            raise ConfigError(f"port {port} on {host} {reason}", field=flag) from None


class PortAnnouncer:
    """Collects bound servers, prints one line each and rewrites the ports file atomically."""

    def __init__(self, ports_file: Path | None = None) -> None:
        self._ports_file = ports_file
        self._urls: dict[str, str] = {}

    @property
    def urls(self) -> dict[str, str]:
        return dict(self._urls)

    def announce(self, name: str, url: str) -> None:
        self._urls[name] = url
        # The file first: whoever reacts to the printed line finds the file complete.
        if self._ports_file is not None:
            tmp = self._ports_file.with_suffix(self._ports_file.suffix + ".tmp")
            tmp.write_text(json.dumps(self._urls, indent=2, sort_keys=True))
            os.replace(tmp, self._ports_file)
        print(f"listening {name} {url}", file=sys.stdout, flush=True)
