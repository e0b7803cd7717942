"""``sluiceway check-config FILE``: validate any configuration document."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from sluiceway.errors import ConfigError

__all__ = ["error_line", "register"]


def error_line(file: Path, exc: Exception) -> str:
    """``error: FILE: <reason>``, the file named once (a document error names it already)."""
    message = str(exc)
    return f"error: {message}" if message.startswith(f"{file}:") else f"error: {file}: {message}"


def check_config(
    file: Annotated[Path, typer.Argument(help="A JSON or YAML configuration file.")],
    kind: Annotated[
        str | None,
        typer.Option(
            help="Document kind, e.g. helm-values (default: detected).",
            show_default=False,
        ),
    ] = None,
    transport: Annotated[
        str | None,
        typer.Option(help="Transport of a transport config or values file (default: detected)."),
    ] = None,
) -> None:
    """Validate a configuration file; exit 1 naming the bad field or unknown type."""
    from sluiceway.config.kinds import check_file

    try:
        result = check_file(file, kind=kind, transport=transport)
    except ConfigError as exc:
        typer.echo(error_line(file, exc), err=True)
        raise typer.Exit(1) from None
    for warning in result.warnings:
        typer.echo(f"warning: {warning}", err=True)
    typer.echo(f"ok: {file} is a valid {result.kind} ({len(result.warnings)} warnings)")


def register(app: typer.Typer) -> None:
    """Add ``check-config`` to the sluiceway command."""
    app.command("check-config")(check_config)
