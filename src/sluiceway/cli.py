"""The ``sluiceway`` command: one typer app whose subcommands parse options and call ``run``.

Each component contributes its commands from its own ``command.py``; this module only wires
them together, so a subcommand's heavy imports happen when it runs, not at start-up.
"""

from __future__ import annotations

import importlib

import typer

__all__ = ["app", "main"]

app = typer.Typer(
    name="sluiceway",
    help="Share one pool of LLM model servers fairly, by priority and quota.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)

# Modules that define ``register(app)``; each adds its own subcommands.
_COMMAND_MODULES: tuple[str, ...] = (
    "sluiceway.sim.command",
    "sluiceway.config.command",
    "sluiceway.processor.command",
    "sluiceway.coordinator.command",
    "sluiceway.demo.command",
    "sluiceway.router.command",
    "sluiceway.broker.command",
    "sluiceway.bench.command",
)


def _register_all() -> None:
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(app)


@app.callback()
def _root() -> None:
    """Share one pool of LLM model servers fairly, by priority and quota."""


@app.command("version")
def version() -> None:
    """Print the installed version."""
    from sluiceway import __version__

    typer.echo(__version__)


def main() -> None:
    """Console-script entry point."""
    _register_all()
    app()
