"""``sluiceway publish``, ``results`` and ``cancel``: a producer's commands.

``publish`` queues requests the way the guide's ``publish()`` shell function names them
(``<team>-<run>-<NNNN>``, ``metadata.team``), through the producer client, so each one can be
cancelled; it prints one id per line. ``results`` only looks unless told ``--consume``: a user
checking on results must not take them from the real consumer. ``cancel`` marks requests
cancelled; the processor answers them ``CANCELLED``.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from sluiceway.errors import ConfigError, SluicewayError
from sluiceway.options import BrokerTransport, BrokerUrl, TimeAnchor, TimeScale, make_clock

__all__ = ["register"]

Opt = typer.Option
DEFAULT_PROMPT = "summarize this"


def register(app: typer.Typer) -> None:
    """Add ``publish``, ``results`` and ``cancel``."""
    app.command("publish")(publish)
    app.command("results")(results)
    app.command("cancel")(cancel)


def _fail(exc: SluicewayError) -> typer.Exit:
    typer.echo(f"error: {exc}", err=True)
    return typer.Exit(2)


def _run(main: Callable[[], Any]) -> Any:
    """Run a command's coroutine; errors become one ``error:`` line and exit 2."""
    try:
        return asyncio.run(main())
    except SluicewayError as exc:
        raise _fail(exc) from None
    except KeyboardInterrupt:
        return None


def _payload(file: Path | None, *, model: str, prompt: str, max_tokens: int) -> dict[str, Any]:
    if file is None:
        return {"model": model, "prompt": prompt, "max_tokens": max_tokens}
    from sluiceway.config.documents import read_document

    doc = read_document(file)
    if not isinstance(doc, dict):
        raise ConfigError(f"{file}: a payload is a JSON object", field="--payload")
    return doc


def _anchor_warning(time_scale: float, time_anchor: float | None) -> str | None:
    if time_scale == 1.0 or time_anchor is not None:
        return None
    return (
        f"--time-scale {time_scale:g} without --time-anchor: this command's clock starts now; "
        "unless the processor started at this very moment, its scaled clock runs ahead and "
        "deadlines may already be past for it. Give every command the same --time-anchor "
        "(or SLUICEWAY_TIME_ANCHOR)."
    )


def publish(
    team: Annotated[str, typer.Argument(help="Team name (metadata.team).", show_default=False)],
    count: Annotated[int, typer.Argument(min=1, help="How many requests.")] = 1,
    queue: Annotated[
        str | None, Opt("--queue", help="Queue (default: team-TEAM).", show_default=False)
    ] = None,
    ttl: Annotated[int, Opt("--ttl", min=1, help="Scaled seconds until the deadline.")] = 300,
    model: Annotated[str, Opt("--model", envvar="MODEL", help="payload.model.")] = (
        "Qwen/Qwen3-32B"
    ),
    prompt: Annotated[str, Opt("--prompt", help="payload.prompt.")] = DEFAULT_PROMPT,
    max_tokens: Annotated[int, Opt("--max-tokens", min=1, help="payload.max_tokens.")] = 64,
    payload: Annotated[
        Path | None,
        Opt(
            "--payload",
            help="JSON file holding the whole payload; replaces --model, --prompt and "
            "--max-tokens (default: none).",
            show_default=False,
        ),
    ] = None,
    transport: BrokerTransport = "redis-sortedset",
    url: BrokerUrl = None,
    time_scale: TimeScale = 1.0,
    time_anchor: TimeAnchor = None,
) -> None:
    """Queue COUNT requests for TEAM and print their ids, one per line."""
    from sluiceway.broker.address import open_named_broker
    from sluiceway.processor.producer import Producer, request

    warning = _anchor_warning(time_scale, time_anchor)
    if warning:
        typer.echo(f"warning: {warning}", err=True)
    clock = make_clock(time_scale, time_anchor)
    target = queue or f"team-{team}"

    async def main() -> list[str]:
        body = _payload(payload, model=model, prompt=prompt, max_tokens=max_tokens)
        broker = await open_named_broker(transport, url, must_exist=False, time_scale=time_scale)
        try:
            now = int(clock.now())
            run_id = f"{now}-{os.getpid() % 32768}"
            requests = [
                request(
                    f"{team}-{run_id}-{i:04d}",
                    body,
                    deadline=now + ttl,
                    created=now,
                    metadata={"team": team},
                )
                for i in range(1, count + 1)
            ]
            submitted = await Producer(broker, queue=target, clock=clock).submit_many(requests)
            return [s.id for s in submitted]
        finally:
            await broker.aclose()

    ids = _run(main) or []
    for request_id in ids:
        typer.echo(request_id)
    typer.echo(f"queued {len(ids)} on {target}, deadline in {ttl} scaled seconds", err=True)


# -- results ----------------------------------------------------------------------------------


def _record_id(raw: str) -> str:
    try:
        doc = json.loads(raw)
    except ValueError:
        return ""
    return str(doc.get("id", "")) if isinstance(doc, dict) else ""


PEEK_LIMIT = 100_000


async def _next_batch(
    broker: Any, destination: str, *, consume: bool, ids: Sequence[str], wait: float, seen: set[str]
) -> list[str]:
    """The next records to print: one popped, or every new one (of ``ids``) peeked."""
    if consume and not ids:
        raw = await broker.pop_result(destination, wait)
        return [] if raw is None else [raw]
    found = [
        raw
        for raw in await broker.peek_results(destination, PEEK_LIMIT)
        if raw not in seen and (not ids or _record_id(raw) in ids)
    ]
    if consume:
        found = [raw for raw in found if await broker.remove_result(destination, raw)]
    seen.update(found)
    return found


async def _records(
    broker: Any, destination: str, *, consume: bool, follow: bool, wait: float, ids: Sequence[str]
) -> AsyncIterator[str]:
    """Records as the flags ask, until none is left (or forever with ``follow``)."""
    seen: set[str] = set()
    while True:
        batch = await _next_batch(
            broker, destination, consume=consume, ids=ids, wait=wait, seen=seen
        )
        for raw in batch:
            yield raw
        if batch:
            continue
        if not follow:
            return
        if ids or not consume:  # a pop already waited
            await asyncio.sleep(wait)


def results(
    result_queue: Annotated[
        str, Opt("--result-queue", help="Result list to read (the guide uses results-list).")
    ] = "result-list",
    consume: Annotated[
        bool, Opt("--consume", help="Take the results out of the list (default: only look).")
    ] = False,
    follow: Annotated[
        bool, Opt("--follow", help="Keep waiting for new results until Ctrl-C.")
    ] = False,
    count: Annotated[
        int | None,
        Opt(
            "--count",
            min=1,
            help="Stop after this many results (default: all).",
            show_default=False,
        ),
    ] = None,
    ids: Annotated[
        list[str] | None,
        Opt(
            "--id",
            help="Only the result of this request id; repeatable (default: all).",
            show_default=False,
        ),
    ] = None,
    wait: Annotated[
        float, Opt("--wait", min=0, help="Wall seconds to wait for a result before looking again.")
    ] = 1.0,
    transport: BrokerTransport = "redis-sortedset",
    url: BrokerUrl = None,
) -> None:
    """Print results (one JSON line each), oldest first, leaving them in place by default."""
    from sluiceway.broker.address import open_named_broker

    wanted = list(ids or [])

    async def main() -> int:
        broker = await open_named_broker(transport, url, must_exist=True)
        printed = 0
        try:
            records = _records(
                broker, result_queue, consume=consume, follow=follow, wait=wait, ids=wanted
            )
            async for raw in records:
                typer.echo(raw)
                printed += 1
                if count is not None and printed >= count:
                    break
        finally:
            await broker.aclose()
        return printed

    printed = _run(main)
    if wanted and not printed:
        typer.echo(f"no result yet for {', '.join(wanted)}", err=True)
        raise typer.Exit(1)


# -- cancel -----------------------------------------------------------------------------------


def cancel(
    ids: Annotated[list[str], typer.Argument(help="Request ids to cancel.", show_default=False)],
    transport: BrokerTransport = "redis-sortedset",
    url: BrokerUrl = None,
    time_scale: TimeScale = 1.0,
    time_anchor: TimeAnchor = None,
) -> None:
    """Cancel requests by id; exit 1 when one was unknown or already finished."""
    from sluiceway.broker.address import open_named_broker
    from sluiceway.processor.producer import Producer

    clock = make_clock(time_scale, time_anchor)

    async def main() -> dict[str, bool]:
        broker = await open_named_broker(transport, url, must_exist=True, time_scale=time_scale)
        try:
            return await Producer(broker, clock=clock).cancel(ids)
        finally:
            await broker.aclose()

    outcome: dict[str, bool] = _run(main) or {}
    for request_id, done in outcome.items():
        typer.echo(f"{'cancelled' if done else 'not found (unknown or finished)'}: {request_id}")
    if not all(outcome.values()):
        raise typer.Exit(1)
