"""``sluiceway db upgrade``: create or migrate the PostgreSQL schema, and nothing else.

A processor on the ``postgres`` transport migrates at start-up; operators who apply schema
changes themselves (a deploy job with owner rights, processors without) run this instead.
"""

from __future__ import annotations

from typing import Annotated

import typer

from sluiceway.errors import SluicewayError

__all__ = ["register", "upgrade"]


def upgrade(
    url: Annotated[
        str | None,
        typer.Option("--url", help="PostgreSQL DSN (default $DATABASE_URL, then $SQL_URL)."),
    ] = None,
) -> None:
    """Bring the sluiceway schema of a PostgreSQL database to this version's."""
    import asyncio

    try:
        before, after = asyncio.run(_upgrade(url))
    except SluicewayError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if before == after:
        typer.echo(f"schema already at version {after}")
    else:
        typer.echo(f"schema upgraded from version {before} to {after}")


async def _upgrade(url: str | None) -> tuple[int, int]:
    from sluiceway.broker.postgres_db import PostgresDatabase, dsn_from, migrate

    db = PostgresDatabase(dsn_from(url))
    await db.open(migrate_schema=False)
    try:
        return await db.run(migrate)
    finally:
        await db.aclose()


def register(app: typer.Typer) -> None:
    """Add the ``db`` command group (``db upgrade``)."""
    db = typer.Typer(help="Database schema of the postgres transport.", no_args_is_help=True)
    db.command("upgrade")(upgrade)
    app.add_typer(db, name="db")
