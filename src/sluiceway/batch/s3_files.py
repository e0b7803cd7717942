"""The file store on an S3-compatible object store (the ``s3`` extra: aiobotocore).

``batch.files_url: s3://BUCKET/PREFIX?endpoint_url=URL&region=REGION`` (the endpoint for a
store other than AWS, such as MinIO or moto; credentials come from the usual AWS variables).
An upload is one object, sent as a multipart upload in ``PART`` pieces as it streams (never
the whole file in memory). An output file grows by appends, which S3 has not: each append is
an object ``<id>.parts/<offset>`` named by where it starts, and a read concatenates the parts
in order. The collector appends at most once per file between two commits, so a crash leaves
at most one part past the committed size, at the committed offset: the next append, at the
same offset, replaces it, and reads stop at the committed size.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import AsyncIterator
from typing import Any, Final
from urllib.parse import parse_qs, urlsplit

from sluiceway.errors import ConfigError

__all__ = ["PART", "S3FileStore", "open_s3_file_store", "s3_location"]

PART: Final = 8 * 1024 * 1024  # S3's multipart parts are at least 5 MiB (but the last)
_OFFSET: Final = 16  # digits of a part's offset in its key


def s3_location(url: str) -> tuple[str, str, dict[str, str]]:
    """(bucket, key prefix, client options) of an ``s3://`` URL."""
    parts = urlsplit(url)
    if parts.scheme != "s3" or not parts.netloc:
        raise ConfigError(f"{url!r}: use s3://BUCKET/PREFIX", field="batch.files_url")
    query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
    options = {"region_name": query.get("region") or os.environ.get("AWS_REGION", "us-east-1")}
    endpoint = query.get("endpoint_url") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        options["endpoint_url"] = endpoint
    prefix = parts.path.strip("/")
    return parts.netloc, f"{prefix}/" if prefix else "", options


class S3FileStore:
    """A :class:`~sluiceway.batch.base.FileStore` in one bucket, under one key prefix."""

    def __init__(self, client: Any, bucket: str, prefix: str, exit_stack: Any = None) -> None:
        self._s3 = client
        self._bucket = bucket
        self._prefix = prefix
        self._stack = exit_stack

    def _key(self, file_id: str) -> str:
        if not file_id or "/" in file_id:
            raise ValueError(f"bad file id {file_id!r}")
        return self._prefix + file_id

    async def write(self, file_id: str, chunks: AsyncIterator[bytes]) -> int:
        key = self._key(file_id)
        upload = await self._s3.create_multipart_upload(Bucket=self._bucket, Key=key)
        uid = upload["UploadId"]
        done: list[dict[str, Any]] = []
        buffer, size = bytearray(), 0
        try:
            async for chunk in chunks:
                buffer.extend(chunk)
                size += len(chunk)
                if len(buffer) >= PART:
                    done.append(await self._part(key, uid, len(done) + 1, bytes(buffer)))
                    buffer.clear()
            if buffer or not done:
                done.append(await self._part(key, uid, len(done) + 1, bytes(buffer)))
        except BaseException:
            with contextlib.suppress(Exception):
                await self._s3.abort_multipart_upload(Bucket=self._bucket, Key=key, UploadId=uid)
            raise
        await self._s3.complete_multipart_upload(
            Bucket=self._bucket, Key=key, UploadId=uid, MultipartUpload={"Parts": done}
        )
        return size

    async def _part(self, key: str, uid: str, number: int, body: bytes) -> dict[str, Any]:
        sent = await self._s3.upload_part(
            Bucket=self._bucket, Key=key, UploadId=uid, PartNumber=number, Body=body
        )
        return {"ETag": sent["ETag"], "PartNumber": number}

    async def _object(self, key: str, chunk_size: int) -> AsyncIterator[bytes]:
        reply = await self._s3.get_object(Bucket=self._bucket, Key=key)
        async with reply["Body"] as body:
            while chunk := await body.read(chunk_size):
                yield chunk

    async def _parts(self, file_id: str) -> list[tuple[int, str, int]]:
        """(offset, key, size) of an appended file's parts, in order."""
        prefix = self._key(file_id) + ".parts/"
        found: list[tuple[int, str, int]] = []
        pages = self._s3.get_paginator("list_objects_v2").paginate(
            Bucket=self._bucket, Prefix=prefix
        )
        async for page in pages:
            for item in page.get("Contents", []):
                found.append((int(item["Key"][len(prefix) :]), item["Key"], int(item["Size"])))
        return sorted(found)

    async def read(self, file_id: str, *, chunk_size: int = 1 << 16) -> AsyncIterator[bytes]:
        parts = await self._parts(file_id)
        if not parts:
            async for chunk in self._object(self._key(file_id), chunk_size):
                yield chunk
            return
        at = 0
        for offset, key, size in parts:
            if offset != at:
                return  # a leftover past a gap: not part of the file
            async for chunk in self._object(key, chunk_size):
                yield chunk
            at = offset + size

    async def append(self, file_id: str, data: bytes, *, at: int) -> int:
        key = f"{self._key(file_id)}.parts/{at:0{_OFFSET}d}"
        await self._s3.put_object(Bucket=self._bucket, Key=key, Body=data)
        return at + len(data)

    async def size(self, file_id: str) -> int | None:
        parts = await self._parts(file_id)
        if parts:
            return parts[-1][0] + parts[-1][2]
        try:
            head = await self._s3.head_object(Bucket=self._bucket, Key=self._key(file_id))
        except Exception as exc:  # botocore's ClientError, 404
            if _status(exc) == 404:
                return None
            raise
        return int(head["ContentLength"])

    async def delete(self, file_id: str) -> bool:
        existed = await self.size(file_id) is not None
        keys = [key for _, key, _ in await self._parts(file_id)] + [self._key(file_id)]
        for key in keys:
            await self._s3.delete_object(Bucket=self._bucket, Key=key)
        return existed

    async def aclose(self) -> None:
        if self._stack is not None:
            await self._stack.aclose()


def _status(exc: Exception) -> int:
    response = getattr(exc, "response", None) or {}
    return int(response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))


async def open_s3_file_store(url: str) -> S3FileStore:
    """The store an ``s3://`` URL names (needs the ``s3`` extra)."""
    try:
        session: Any = importlib.import_module("aiobotocore.session")
    except ImportError:  # the extra is missing
        raise ConfigError(
            "an s3:// file store needs the s3 extra (pip install 'sluiceway[s3]')",
            field="batch.files_url",
        ) from None
    bucket, prefix, options = s3_location(url)
    stack = contextlib.AsyncExitStack()
    client = await stack.enter_async_context(session.get_session().create_client("s3", **options))
    return S3FileStore(client, bucket, prefix, stack)
