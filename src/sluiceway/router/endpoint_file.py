"""``--endpoints-file``: model-server URLs, one a line, re-read whenever the file changes.

Blank lines and ``#`` comments are skipped; every other line must be an http(s) URL. An edit
that cannot be used (the file unreadable or gone, a line that is not a URL) keeps the previous
list and logs one ERROR line naming the line at fault. An empty file is a valid edit: the
file's endpoints leave the pool (those given with ``--endpoints`` stay).
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Final

from sluiceway.config.urls import check_http_url
from sluiceway.errors import ConfigError
from sluiceway.router.membership import Membership
from sluiceway.router.path_watch import watch_path

__all__ = ["FILE_SOURCE", "parse_endpoint_lines", "read_endpoint_file", "watch_endpoint_file"]

log = logging.getLogger(__name__)

FILE_SOURCE: Final = "--endpoints-file"


def parse_endpoint_lines(text: str) -> list[str]:
    """The URLs of an endpoints file's ``text``; ConfigError naming the first bad line."""
    urls = []
    for number, line in enumerate(text.splitlines(), 1):
        url = line.strip()
        if not url or url.startswith("#"):
            continue
        urls.append(check_http_url(url, field=f"{FILE_SOURCE} line {number}"))
    return urls


def read_endpoint_file(path: Path) -> list[str]:
    """The URLs in the file at ``path``; ConfigError when it cannot be read or used."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}", field=FILE_SOURCE) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text", field=FILE_SOURCE) from None
    return parse_endpoint_lines(text)


async def watch_endpoint_file(
    path: Path,
    membership: Membership,
    *,
    stop: asyncio.Event | None = None,
    debounce_ms: int = 200,
) -> None:
    """Publish the file's URLs to ``membership`` after every change until ``stop`` is set."""

    async def reload() -> None:
        urls = read_endpoint_file(path)
        if tuple(urls) != membership.source(FILE_SOURCE):
            log.info("endpoints file %s changed: %d endpoints", path, len(urls))
        await membership.publish(FILE_SOURCE, urls)

    await watch_path(path, reload, what="endpoints file", stop=stop, debounce_ms=debounce_ms)
