"""The streaming multipart reader, fed a real SDK-shaped body in every chunking."""

from __future__ import annotations

import pytest

from sluiceway.batch.multipart import (
    MultipartError,
    MultipartParser,
    PartData,
    PartStart,
    boundary_of,
)

BOUNDARY = b"xyz123"
BODY = (
    b"--xyz123\r\n"
    b'Content-Disposition: form-data; name="purpose"\r\n\r\n'
    b"batch\r\n"
    b"--xyz123\r\n"
    b'Content-Disposition: form-data; name="file"; filename="in.jsonl"\r\n'
    b"Content-Type: application/octet-stream\r\n\r\n"
    b'{"a": 1}\r\n{"b": "--xyz12"}\n'
    b"\r\n--xyz123--\r\n"
)


def parts(chunks: list[bytes]) -> list[tuple[str, str | None, bytes]]:
    parser = MultipartParser(BOUNDARY)
    out: list[tuple[str, str | None, bytes]] = []
    for chunk in chunks:
        for event in parser.feed(chunk):
            if isinstance(event, PartStart):
                out.append((event.name, event.filename, b""))
            else:
                assert isinstance(event, PartData)
                name, filename, data = out[-1]
                out[-1] = (name, filename, data + event.data)
    parser.close()
    return out


@pytest.mark.parametrize("size", [1, 2, 3, 7, 11, 64, len(BODY)])
def test_any_chunking_gives_the_same_parts(size: int) -> None:
    chunks = [BODY[i : i + size] for i in range(0, len(BODY), size)]
    assert parts(chunks) == [
        ("purpose", None, b"batch"),
        ("file", "in.jsonl", b'{"a": 1}\r\n{"b": "--xyz12"}\n'),
    ]


def test_a_body_cut_short_is_an_error() -> None:
    parser = MultipartParser(BOUNDARY)
    parser.feed(BODY[:-20])
    with pytest.raises(MultipartError, match="ended early"):
        parser.close()


def test_bad_headers_and_content_types_are_refused() -> None:
    with pytest.raises(MultipartError, match="multipart/form-data"):
        boundary_of("application/json")
    with pytest.raises(MultipartError, match="boundary"):
        boundary_of("multipart/form-data")
    assert boundary_of('multipart/form-data; boundary="abc"') == b"abc"
    with pytest.raises(MultipartError, match="content-disposition"):
        MultipartParser(b"b").feed(b"--b\r\nX-Other: 1\r\n\r\n")
    with pytest.raises(MultipartError, match="delimiter"):
        MultipartParser(b"b").feed(b"--b??")
