"""The S3 file store against moto's standalone server: streamed multipart uploads, appends as
parts (a crash's leftover replaced), reads stopping at a gap, deletes; and a whole batch over
it through the SDK."""

from __future__ import annotations

import asyncio
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

pytest.importorskip("aiobotocore")

from sluiceway.batch.base import lines_of
from sluiceway.batch.s3_files import PART, S3FileStore, open_s3_file_store, s3_location
from sluiceway.errors import ConfigError

MOTO = shutil.which("moto_server") or str(Path(__file__).parents[3] / ".venv/bin/moto_server")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def moto_url() -> Iterator[str]:
    if not Path(MOTO).exists():
        pytest.skip("moto_server is not installed (the dev extra)")
    port = _free_port()
    proc = subprocess.Popen(
        [MOTO, "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            urllib.request.urlopen(url + "/moto-api/", timeout=1).close()
            break
        except OSError:
            assert time.monotonic() < deadline, "moto_server did not start"
            time.sleep(0.1)
    try:
        yield url
    finally:
        proc.terminate()
        proc.wait(10)


@pytest.fixture
async def store(moto_url: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[S3FileStore]:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "test",
        "AWS_SECRET_ACCESS_KEY": "test",
    }.items():
        monkeypatch.setenv(name, value)
    bucket = f"b{time.monotonic_ns()}"
    opened = await open_s3_file_store(f"s3://{bucket}/batch?endpoint_url={moto_url}")
    await opened._s3.create_bucket(Bucket=bucket)
    try:
        yield opened
    finally:
        await opened.aclose()


async def chunks(data: bytes, size: int) -> AsyncIterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


async def gather(source: AsyncIterator[bytes]) -> bytes:
    return b"".join([c async for c in source])


async def test_an_upload_streams_in_parts_and_reads_back(store: S3FileStore) -> None:
    data = b"".join(b"line %08d\n" % i for i in range(PART // 14 + 1000))  # over one part
    assert len(data) > PART
    assert await store.write("file-1", chunks(data, 100_000)) == len(data)
    assert await gather(store.read("file-1")) == data
    lines = [line async for line in lines_of(store.read("file-1"))]
    assert lines[0] == b"line 00000000\n" and len(lines) == data.count(b"\n")
    assert await store.size("file-1") == len(data)
    assert await store.delete("file-1") and await store.size("file-1") is None


async def test_a_failed_upload_leaves_no_object(store: S3FileStore) -> None:
    async def broken() -> AsyncIterator[bytes]:
        yield b"x"
        raise ValueError("line 1: bad")

    with pytest.raises(ValueError, match="line 1"):
        await store.write("file-2", broken())
    assert await store.size("file-2") is None


async def test_appends_replace_a_crashs_leftover_and_stop_at_gaps(store: S3FileStore) -> None:
    assert await store.append("out", b"one\n", at=0) == 4
    await store.append("out", b"lost, never committed\n", at=4)
    assert await store.append("out", b"two\n", at=4) == 8  # the retry at the same offset
    assert await gather(store.read("out")) == b"one\ntwo\n"
    await store.append("out", b"far\n", at=100)  # past a gap: not part of the file
    assert await gather(store.read("out")) == b"one\ntwo\n"
    assert await store.delete("out")
    assert await store.size("out") is None


def test_urls_name_bucket_prefix_and_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    bucket, prefix, options = s3_location("s3://files/batch/in?endpoint_url=http://h:9&region=x")
    assert (bucket, prefix) == ("files", "batch/in/")
    assert options == {"region_name": "x", "endpoint_url": "http://h:9"}
    assert s3_location("s3://files")[1] == ""
    with pytest.raises(ConfigError):
        s3_location("http://files/batch")


@pytest.mark.serial
async def test_a_batch_over_s3(
    moto_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import openai
    from batch_rig import input_lines, read_lines, running_batch_front

    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "test")
    files = await open_s3_file_store(f"s3://batchfiles?endpoint_url={moto_url}")
    await files._s3.create_bucket(Bucket="batchfiles")
    try:
        async with running_batch_front(tmp_path, file_store=files) as front:
            headers = {"x-llm-d-tenant": "premium"}
            async with openai.AsyncOpenAI(
                base_url=f"{front.url}/v1", api_key="-", max_retries=0, default_headers=headers
            ) as api:
                uploaded = await api.files.create(
                    file=("in.jsonl", input_lines(200)), purpose="batch"
                )
                batch = await api.batches.create(
                    input_file_id=uploaded.id, endpoint="/v1/completions", completion_window="24h"
                )
                deadline = time.monotonic() + 60
                while (batch := await api.batches.retrieve(batch.id)).status != "completed":
                    assert time.monotonic() < deadline, batch.status
                    await asyncio.sleep(0.1)
                assert batch.output_file_id is not None
                output = (await api.files.content(batch.output_file_id)).content
                ids = sorted(line["custom_id"] for line in read_lines(output))
                assert ids == sorted(f"req-{i}" for i in range(200))
    finally:
        await files.aclose()
    assert os.listdir(tmp_path) == []  # nothing went to the local disk
