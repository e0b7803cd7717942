"""Finished requests exported as OTLP/HTTP protobuf, encoded straight from their span tuples.

The SDK's exporter turns each ``ReadableSpan`` into protobuf message objects and then into
bytes, which cost as much as making the spans; here a request's spans are written as the wire
bytes of ``ExportTraceServiceRequest`` (``opentelemetry/proto/trace/v1/trace.proto``) by hand,
the constant parts (resource, scope, attribute keys) encoded once. Batching, its queue and the
``OTEL_BSP_*`` settings stay the SDK's :class:`BatchSpanProcessor`; the HTTP request (endpoint,
headers, timeout, compression, TLS, retries from ``OTEL_EXPORTER_OTLP_*``) stays the SDK
exporter's, handed the encoded body.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, Final, cast

from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.trace import SpanContext, TraceFlags

from sluiceway.observability.served_request import ServedRequest
from sluiceway.observability.trace_spans import RequestTrace, SpanData, spans_of

if TYPE_CHECKING:
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["OtlpRequests", "encode_requests", "encode_spans", "lean_transport"]

log = logging.getLogger(__name__)

Post = Callable[[bytes], bool]

_BYTES: Final = [bytes((i,)) for i in range(128)]
_TIMES: Final = struct.Struct("<BQBQ")  # start (field 7) and end (field 8), fixed64
_ERROR: Final = b"\x7a\x02\x18\x02"  # status {code: STATUS_CODE_ERROR}
_UNSET: Final = b"\x7a\x00"  # status {} (the SDK always writes one)
_FLAGS: Final = b"\x85\x01"  # field 16, fixed32: span flags
_HAS_IS_REMOTE: Final = 0x100
_IS_REMOTE: Final = 0x200
# A span's last fields, status and flags, by (error, whether its parent came from a header).
_TAILS: Final = {
    (error, remote): (_ERROR if error else _UNSET)
    + _FLAGS
    + struct.pack("<I", _HAS_IS_REMOTE | remote)
    for error in (False, True)
    for remote in (0, _IS_REMOTE)
}
_MASK64: Final = (1 << 64) - 1
_KEYS: dict[str, bytes] = {}  # attribute key -> its encoded ``key`` field and value tag
# Span attributes seen (method, route, tenant, model, endpoint, status ...) -> their encoded
# field: most repeat from request to request. Emptied when full (ids and counts churn it).
_SEEN: dict[tuple[str, object], bytes] = {}
_SEEN_MAX: Final = 4096
_NAMES: dict[tuple[str, int], bytes] = {}


def _varint(n: int) -> bytes:
    if n < 0x80:
        return _BYTES[n]
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, payload: bytes) -> bytes:
    """A length-delimited field: ``tag``, the length, ``payload``."""
    return tag + _varint(len(payload)) + payload


def _value(value: object) -> bytes:
    """An ``AnyValue`` message."""
    if isinstance(value, str):
        return _field(b"\x0a", value.encode())
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, int):
        return b"\x18" + _varint(value & _MASK64)
    if isinstance(value, float):
        return b"\x21" + struct.pack("<d", value)
    if isinstance(value, bytes):
        return _field(b"\x3a", value)
    if isinstance(value, Sequence):
        return _field(b"\x2a", b"".join(_field(b"\x0a", _value(v)) for v in value))
    return _field(b"\x0a", str(value).encode())


def _key_value(key: str, value: object) -> bytes:
    """A ``KeyValue`` message (its key's bytes encoded once)."""
    head = _KEYS.get(key)
    if head is None:
        head = _KEYS[key] = _field(b"\x0a", key.encode()) + b"\x12"
    encoded = _value(value)
    return head + _varint(len(encoded)) + encoded


def _attribute(key: str, value: object) -> bytes:
    """A span's ``attributes`` field, encoded once while it repeats."""
    if isinstance(value, bool):  # True == 1: never confused with an int in the cache
        return _field(b"\x4a", _key_value(key, value))
    pair = (key, value)
    found = _SEEN.get(pair)
    if found is None:
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.clear()
        found = _SEEN[pair] = _field(b"\x4a", _key_value(key, value))
    return found


def _named(name: str, kind: int) -> bytes:
    """A span's ``name`` and ``kind`` fields, encoded once (names are route templates and
    step names: a few)."""
    found = _NAMES.get((name, kind))
    if found is None:
        if len(_NAMES) >= _SEEN_MAX:
            _NAMES.clear()
        found = _NAMES[name, kind] = _field(b"\x2a", name.encode()) + b"\x30" + _BYTES[kind]
    return found


def encode_spans(spans: Iterable[SpanData], trace: RequestTrace) -> bytes:
    """``spans`` of one trace, each a ``ScopeSpans.spans`` field (``Span`` messages)."""
    # trace_id, then the span_id field's tag and length
    head = b"\x0a\x10" + trace.trace_id.to_bytes(16, "big") + b"\x12\x08"
    state = _field(b"\x1a", trace.trace_state.encode()) if trace.trace_state else b""
    server = trace.span_id
    caller = _IS_REMOTE if trace.remote else 0
    out = []
    for span in spans:
        parent = span.parent_id
        body = b"".join(
            (
                head,
                span.span_id.to_bytes(8, "big"),
                state,
                b"\x22\x08" + parent.to_bytes(8, "big") if parent else b"",
                _named(span.name, span.kind),
                _TIMES.pack(0x39, span.start_ns, 0x41, span.end_ns),
                *[_attribute(k, v) for k, v in span.attributes],
                _TAILS[span.error, caller if parent and span.span_id == server else 0],
            )
        )
        out.append(b"\x12" + _varint(len(body)) + body)
    return b"".join(out)


def encode_requests(
    records: Iterable[ServedRequest], envelope: tuple[bytes, bytes], new_id: Callable[[], int]
) -> bytes:
    """An ``ExportTraceServiceRequest`` of ``records``' spans: ``envelope`` is the encoded
    resource and scope (:func:`envelope`)."""
    resource, scope = envelope
    spans = []
    for record in records:
        trace = record.trace
        if isinstance(trace, RequestTrace):
            spans.append(encode_spans(spans_of(record, trace, new_id), trace))
    scope_spans = _field(b"\x12", scope + b"".join(spans))
    return _field(b"\x0a", resource + scope_spans)


def envelope(resource: Resource, scope: str) -> tuple[bytes, bytes]:
    """The ``ResourceSpans.resource`` and ``ScopeSpans.scope`` fields, encoded once."""
    attributes = b"".join(_field(b"\x0a", _key_value(k, v)) for k, v in resource.attributes.items())
    return _field(b"\x0a", attributes), _field(b"\x0a", _field(b"\x0a", scope.encode()))


class _Finished:
    """A request handed to the batch processor, which reads ``context.trace_flags.sampled``
    (only sampled requests are handed over)."""

    __slots__ = ("record",)
    context: Final = SpanContext(1, 1, False, TraceFlags(TraceFlags.SAMPLED))

    def __init__(self, record: ServedRequest) -> None:
        self.record = record


class _Exporter(SpanExporter):
    """A batch of finished requests, encoded and posted."""

    def __init__(self, post: Post, envelope: tuple[bytes, bytes], new_id: Callable[[], int]):
        self._post = post
        self._envelope = envelope
        self._new_id = new_id

    def export(self, spans: Sequence[Any]) -> SpanExportResult:
        try:
            body = encode_requests((s.record for s in spans), self._envelope, self._new_id)
        except Exception:  # one bad record must not stop the thread
            log.exception("could not encode %d traced requests", len(spans))
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS if self._post(body) else SpanExportResult.FAILURE


class OtlpRequests(SpanProcessor):
    """Finished requests batched (the SDK's batch processor) and posted as OTLP protobuf.

    Added to the provider as its span processor, so that its shutdown (at exit, too) sends what
    is buffered; spans the SDK makes itself are not this processor's (there are none)."""

    def __init__(
        self, post: Post, resource: Resource, new_id: Callable[[], int], scope: str = "sluiceway"
    ) -> None:
        self._batch = BatchSpanProcessor(_Exporter(post, envelope(resource, scope), new_id))

    def add(self, record: ServedRequest) -> None:
        """``record``, traced, sampled and over, to export."""
        self._batch.on_end(cast("ReadableSpan", _Finished(record)))

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return self._batch.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self._batch.shutdown()  # type: ignore[no-untyped-call]


def lean_transport(exporter: OTLPSpanExporter) -> Post | None:
    """How to post an encoded body with ``exporter``'s HTTP set-up (its retries, compression,
    headers, timeout), or None when this SDK version does not expose it (then the SDK encodes,
    as usual)."""
    client = getattr(exporter, "_client", None)
    send = getattr(client, "export", None)
    if send is None:
        return None
    _plain_transport(client, getattr(exporter, "_endpoint", ""))

    def post(body: bytes) -> bool:
        return bool(send(body).success)

    return post


def _plain_transport(client: object, endpoint: str) -> None:
    """``client``'s requests session swapped for the SDK's urllib3 transport (a post costs a
    third), with the same TLS settings, unless requests would add to the post: a proxy or
    netrc credentials from the environment, a session of the user's (a credential provider)."""
    try:
        import requests
        from opentelemetry.exporter.http.transport._requests import RequestsHTTPTransport
        from opentelemetry.exporter.http.transport._urllib3 import Urllib3HTTPTransport
        from requests.utils import get_netrc_auth
    except ImportError:
        return
    transport = getattr(client, "_transport", None)
    session = getattr(transport, "_session", None)
    if type(transport) is not RequestsHTTPTransport or type(session) is not requests.Session:
        return
    # What requests would take from the environment for this endpoint: its CA bundle is kept
    # (REQUESTS_CA_BUNDLE), a proxy or netrc credentials keep requests.
    found = session.merge_environment_settings(endpoint, {}, None, session.verify, session.cert)
    if found["proxies"] or session.auth is not None or get_netrc_auth(endpoint) is not None:
        return
    verify, cert = found["verify"], found["cert"]
    client._transport = Urllib3HTTPTransport(verify=verify, cert=cert)  # type: ignore[attr-defined]
    session.close()
