"""The ``sluiceway`` command: one typer app whose subcommands parse options and call ``run``.

Each component contributes its commands from its own ``command.py``; this module only wires
them together, so a subcommand's heavy imports happen when it runs, not at start-up.

Help is click's plain layout (``rich_markup_mode=None``): it wraps descriptions but never cuts
a flag name, whatever the terminal width. Usage errors print one ``error:`` line and exit 2.
"""

from __future__ import annotations

import importlib
import sys
from typing import Annotated

import typer

__all__ = ["app", "main"]

app = typer.Typer(
    name="sluiceway",
    help="Share one pool of LLM model servers fairly, by priority and quota.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode=None,
    context_settings={"show_default": True, "max_content_width": 100},
)

# Modules that define ``register(app)``; each adds its own subcommands.
_COMMAND_MODULES: tuple[str, ...] = (
    "sluiceway.sim.command",
    "sluiceway.config.command",
    "sluiceway.processor.command",
    "sluiceway.coordinator.command",
    "sluiceway.cli_requests",
    "sluiceway.status",
    "sluiceway.demo.command",
    "sluiceway.router.command",
    "sluiceway.broker.command",
    "sluiceway.bench.command",
)


def register_all(target: typer.Typer = app) -> typer.Typer:
    """Add every component's subcommands to ``target``, once (later calls change nothing)."""
    if any(c.name == "processor" for c in target.registered_commands):
        return target
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(target)
    return target


def _print_version(value: bool) -> None:
    if value:
        from sluiceway import __version__

        typer.echo(__version__)
        raise typer.Exit(0)


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            callback=_print_version,
            is_eager=True,
            help="Print the installed version and exit.",
        ),
    ] = False,
) -> None:
    """Share one pool of LLM model servers fairly, by priority and quota."""


@app.command("version")
def version() -> None:
    """Print the installed version."""
    from sluiceway import __version__

    typer.echo(__version__)


def run(args: list[str] | None = None) -> int:
    """Run the command line; usage errors become one ``error:`` line and exit code 2."""
    register_all()
    try:
        code = app(args=args, standalone_mode=False)
    except typer.Abort:
        typer.echo("aborted", err=True)
        return 130
    except typer.TyperException as exc:  # click's usage errors (exit 2) and the like
        if type(exc).__name__ == "NoArgsIsHelpError":  # bare ``sluiceway``: the help itself
            typer.echo(exc.format_message())
            return exc.exit_code
        typer.echo(f"error: {exc.format_message()}", err=True)
        return exc.exit_code
    return code if isinstance(code, int) else 0


def main() -> None:
    """Console-script entry point."""
    sys.exit(run())
