"""Options every subcommand shares (time scale and anchor, ports, logs, access log, broker
address).

Each is a reusable typer annotation whose help is one line ending in its default, so every
command describes the same flag the same way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sluiceway.clock import RealClock

__all__ = [
    "AccessLogSample",
    "BrokerTransport",
    "BrokerUrl",
    "LogFormat",
    "LogLevel",
    "Port",
    "PortsFile",
    "TimeAnchor",
    "TimeScale",
    "make_clock",
]

TimeScale = Annotated[
    float,
    typer.Option(
        "--time-scale",
        min=0.0001,
        envvar="SLUICEWAY_TIME_SCALE",
        help="Speed-up of the whole world: scaled now = anchor + (wall - anchor) x S.",
    ),
]
TimeAnchor = Annotated[
    float | None,
    typer.Option(
        "--time-anchor",
        envvar="SLUICEWAY_TIME_ANCHOR",
        help="Unix seconds the time scale pivots on; give every command the same one "
        "(default: this process's start).",
        show_default=False,
    ),
]
Port = Annotated[
    int, typer.Option("--port", min=0, max=65535, help="TCP port; 0 picks a free one.")
]
PortsFile = Annotated[
    Path | None,
    typer.Option("--ports-file", help="Write the bound ports to this JSON file (default: none)."),
]
LogLevel = Annotated[
    str, typer.Option("--log-level", help="Log level: debug, info, warning or error.")
]
LogFormat = Annotated[
    str,
    typer.Option("--log-format", help="Log lines as text, or json (one object per line)."),
]
AccessLogSample = Annotated[
    float,
    typer.Option(
        "--access-log-sample",
        min=0.0,
        max=1.0,
        help="Fraction of requests in the access log, 0 to 1 (0: off; 5xx and cut streams "
        "always, while on).",
    ),
]
BrokerTransport = Annotated[
    str, typer.Option("--transport", help="Broker: redis-sortedset, postgres or sqlite.")
]
BrokerUrl = Annotated[
    str | None,
    typer.Option(
        "--url",
        help="redis://, rediss:// (TLS options as ?ssl_ca_certs=, ssl_certfile=, "
        "ssl_keyfile=, ssl_server_name=) or redis+sentinel:// URL, postgresql:// DSN or SQLite "
        "file path (default: $REDIS_URL, or $DATABASE_URL for postgres).",
        show_default=False,
    ),
]


def make_clock(time_scale: float, time_anchor: float | None) -> RealClock:
    """The process clock from the shared flags."""
    return RealClock(scale=time_scale, anchor=time_anchor)
