"""The Batch API's routes on the coordinator: ``/v1/files`` and ``/v1/batches`` (docs/batch.md).

Each handler resolves the tenant as every route does (API key, or the trusted tenant header),
then asks :class:`~sluiceway.batch.service.BatchService`; another tenant's file or batch is
404. An upload is read as it streams (``batch.multipart``): the ``purpose`` field, then the
``file`` part passed to the file store chunk by chunk, never held whole. Where batches are
turned off (``batch.enabled: false``), every route answers 501.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Final

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from sluiceway.batch.multipart import (
    MultipartError,
    MultipartParser,
    PartData,
    PartStart,
    boundary_of,
)
from sluiceway.batch.service import BatchRefused, BatchService
from sluiceway.coordinator.answers import RequestRejected
from sluiceway.coordinator.identity import TenantIdentity
from sluiceway.coordinator.methods import Handler

__all__ = ["MAX_UPLOAD_BYTES", "batch_routes"]

log = logging.getLogger(__name__)
MAX_UPLOAD_BYTES: Final = 200 * 1024 * 1024  # OpenAI's limit for a batch input file
_MAX_FIELD: Final = 1024
_MAX_JSON: Final = 64 * 1024


def _refused(exc: BatchRefused) -> RequestRejected:
    return RequestRejected(exc.status, exc.code, exc.message)


class _Upload:
    """The fields of a streamed multipart upload, read up to the ``file`` part."""

    def __init__(self, request: Request) -> None:
        try:
            self._parser = MultipartParser(boundary_of(request.headers.get("content-type")))
        except MultipartError as exc:
            raise RequestRejected(400, "invalid_multipart", str(exc)) from None
        self._stream = request.stream()
        self._pending: list[PartStart | PartData] = []
        self.fields: dict[str, str] = {}
        self.filename = ""
        self._size = 0

    async def _events(self) -> AsyncIterator[PartStart | PartData]:
        while True:
            while self._pending:
                yield self._pending.pop(0)
            chunk = await anext(self._stream, None)
            if chunk is None:
                self._parser.close()
                return
            self._size += len(chunk)
            if self._size > MAX_UPLOAD_BYTES:
                raise BatchRefused(413, "file_too_large", f"over {MAX_UPLOAD_BYTES} bytes")
            self._pending = list(self._parser.feed(chunk))

    async def until_file(self) -> AsyncIterator[bytes]:
        """Read the fields before the ``file`` part; its bytes, as they come."""
        events = self._events()
        current = ""
        async for event in events:
            if isinstance(event, PartStart):
                current = event.name
                if current == "file":
                    self.filename = event.filename or "upload.jsonl"
                    return self._file(events)
            elif current != "file":
                value = self.fields.get(current, "") + event.data.decode("utf-8", "replace")
                if len(value) > _MAX_FIELD:
                    raise BatchRefused(400, "invalid_multipart", f"field {current} too long")
                self.fields[current] = value
        raise BatchRefused(400, "invalid_multipart", "no file part")

    async def _file(self, events: AsyncIterator[PartStart | PartData]) -> AsyncIterator[bytes]:
        async for event in events:
            if isinstance(event, PartStart):
                break  # fields after the file are not read
            yield event.data


def _guard(fn: Callable[[Request], Awaitable[Response]]) -> Handler:
    async def guarded(request: Request) -> Response:
        try:
            return await fn(request)
        except BatchRefused as exc:
            raise _refused(exc) from None
        except MultipartError as exc:
            raise RequestRejected(400, "invalid_multipart", str(exc)) from None

    return guarded


async def _json_body(request: Request) -> dict[str, Any]:
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > _MAX_JSON:
            raise RequestRejected(413, "body_too_large", f"over {_MAX_JSON} bytes")
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError:
        doc = None
    if not isinstance(doc, dict):
        raise RequestRejected(400, "invalid_json", "request body must be a JSON object")
    return doc


def _str_field(doc: Mapping[str, Any], name: str) -> str:
    value = doc.get(name)
    if not isinstance(value, str) or not value:
        raise RequestRejected(400, "missing_field", f"{name} is required")
    return value


def _page(data: list[dict[str, Any]], has_more: bool) -> JSONResponse:
    first = data[0]["id"] if data else None
    last = data[-1]["id"] if data else None
    body = {"object": "list", "data": data, "first_id": first, "last_id": last}
    return JSONResponse({**body, "has_more": has_more})


class _Handlers:
    """One handler per route, each: the tenant, then the service."""

    def __init__(self, service: BatchService, identity: TenantIdentity) -> None:
        self._s = service
        self._identity = identity

    def _tenant(self, request: Request) -> str:
        return self._identity.tenant(request.headers)

    def table(self) -> dict[str, dict[str, Callable[[Request], Awaitable[Response]]]]:
        return {
            "/v1/files": {"POST": self.upload, "GET": self.list_files},
            "/v1/files/{id}": {"GET": self.get_file, "DELETE": self.delete_file},
            "/v1/files/{id}/content": {"GET": self.content},
            "/v1/batches": {"POST": self.create, "GET": self.list_batches},
            "/v1/batches/{id}": {"GET": self.get_batch},
            "/v1/batches/{id}/cancel": {"POST": self.cancel},
        }

    async def upload(self, request: Request) -> Response:
        tenant = self._tenant(request)
        form = _Upload(request)
        body = await form.until_file()
        purpose = form.fields.get("purpose", "")
        info = await self._s.create_file(tenant, filename=form.filename, purpose=purpose, body=body)
        return JSONResponse(info.to_openai())

    async def list_files(self, request: Request) -> Response:
        return _page([f.to_openai() for f in await self._s.files(self._tenant(request))], False)

    async def get_file(self, request: Request) -> Response:
        info = await self._s.file(self._tenant(request), _id(request))
        return JSONResponse(info.to_openai())

    async def content(self, request: Request) -> Response:
        chunks = await self._s.content(self._tenant(request), _id(request))
        return StreamingResponse(chunks, media_type="application/octet-stream")

    async def delete_file(self, request: Request) -> Response:
        file_id = _id(request)
        await self._s.delete_file(self._tenant(request), file_id)
        return JSONResponse({"id": file_id, "object": "file", "deleted": True})

    async def create(self, request: Request) -> Response:
        tenant = self._tenant(request)
        doc = await _json_body(request)
        metadata = doc.get("metadata")
        job = await self._s.create_batch(
            tenant,
            input_file_id=_str_field(doc, "input_file_id"),
            endpoint=_str_field(doc, "endpoint"),
            completion_window=_str_field(doc, "completion_window"),
            metadata=metadata if isinstance(metadata, dict) else None,
        )
        return JSONResponse(job.to_openai())

    async def get_batch(self, request: Request) -> Response:
        job = await self._s.batch(self._tenant(request), _id(request))
        return JSONResponse(job.to_openai())

    async def list_batches(self, request: Request) -> Response:
        limit = request.query_params.get("limit", "20")
        if not limit.isdigit():
            raise RequestRejected(400, "invalid_limit", "limit must be a whole number")
        after = request.query_params.get("after")
        page = await self._s.batches(self._tenant(request), after=after, limit=int(limit))
        return _page([j.to_openai() for j in page.jobs], page.has_more)

    async def cancel(self, request: Request) -> Response:
        job = await self._s.cancel(self._tenant(request), _id(request))
        return JSONResponse(job.to_openai())


def _id(request: Request) -> str:
    return str(request.path_params["id"])


async def _unsupported(request: Request) -> Response:
    raise RequestRejected(501, "batches_unsupported", "the Batch API is off here")


def batch_routes(
    service: BatchService | None, identity: TenantIdentity
) -> dict[str, dict[str, Handler]]:
    """Path -> method -> handler for the coordinator's own routes."""
    if service is None:
        return {p: {m: _unsupported for m in ms} for p, ms in _PATHS.items()}
    table = _Handlers(service, identity).table()
    return {path: {m: _guard(h) for m, h in methods.items()} for path, methods in table.items()}


_PATHS: Final = {
    "/v1/files": ("POST", "GET"),
    "/v1/files/{id}": ("GET", "DELETE"),
    "/v1/files/{id}/content": ("GET",),
    "/v1/batches": ("POST", "GET"),
    "/v1/batches/{id}": ("GET",),
    "/v1/batches/{id}/cancel": ("POST",),
}
