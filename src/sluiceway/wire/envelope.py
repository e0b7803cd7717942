"""The queue entry: a JSON envelope stored as a Redis sorted-set member, in llm-d-async's format.

Decoding is tolerant where producers differ (``internal`` may be ``{}`` or missing, numbers may be
ints or floats, ``request_kind`` may be missing and then means ``plain``) and strict where a wrong
value would change what is sent upstream. A bad entry raises :class:`EntryError`, which says whether
its id could be read (then it deserves an ``INVALID_REQUEST`` result, docs/design-rules.md rule 14)
or not (then it belongs on ``<queue>:invalid``).

Encoding is compact JSON (no spaces, keys in contract order) and omits empty optional fields, so a
raw producer's entry decodes and re-encodes to the same bytes when it was written compactly.

:class:`Envelope`, :class:`RequestData` and :class:`Internal` are values that nothing mutates
(a changed copy comes from :meth:`Envelope.with_internal`), but they are not ``frozen``
dataclasses: every entry a processor takes builds five of them, and a frozen ``__init__`` costs
about two and a half times a plain one.
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from sluiceway.errors import WireError
from sluiceway.wire.codes import ErrorCode
from sluiceway.wire.member import derive_request_token, header_problem, member_problem
from sluiceway.wire.member import mint_request_token as mint_request_token

__all__ = [
    "REQUEST_KINDS",
    "EntryError",
    "Envelope",
    "Internal",
    "RequestData",
    "decode_envelope",
    "decode_request_data",
    "derive_request_token",
    "encode_envelope",
    "mint_request_token",
    "request_data_obj",
]

REQUEST_KINDS: Final = ("plain", "redis", "pubsub")
Number = int | float


class EntryError(WireError):
    """A queue entry that does not follow the contract.

    ``entry_id`` is None when the id could not be read: such an entry cannot get a result and is
    moved aside. Otherwise the entry gets an error result with ``code`` on ``result_route`` (None =
    the queue's configured route) carrying ``request_token`` (derived from the raw member).
    """

    def __init__(
        self,
        message: str,
        *,
        entry_id: str | None = None,
        result_route: str | None = None,
        request_token: str = "",
        code: ErrorCode = ErrorCode.INVALID_REQUEST,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.entry_id = entry_id
        self.result_route = result_route
        self.request_token = request_token
        self.code = code

    @property
    def readable(self) -> bool:
        """True when the entry's id is known, so an error result can be written."""
        return self.entry_id is not None


@dataclass(slots=True)
class Internal:
    """Routing data the processor keeps beside the request (upstream ``InternalRouting``).

    ``request_token`` is the generation token a producer minted ("" = none; then the envelope
    derives one). ``labels`` carries the queue labels (``tier``) and ``classification``.
    """

    retry_count: int = 0
    queue_id: str = ""
    request_token: str = ""
    request_queue_name: str = ""
    result_queue_name: str = ""
    transport_correlation_id: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    result_ttl_seconds: int | None = None
    result_routing_resolved: bool = False
    enqueued_at_ms: int | None = None


# An Internal's values in field order, read in C (``dataclasses.replace`` costs twice as much).
_internal_values: Final = operator.attrgetter(*(f.name for f in dataclasses.fields(Internal)))


@dataclass(slots=True)
class RequestData:
    """The public request (upstream ``RequestMessage`` and its redis / pubsub variants).

    ``created`` and ``deadline`` are Unix seconds; ``payload`` is any JSON value (the body sent
    upstream); ``endpoint`` ("" = the queue's path) overrides the request path.
    """

    id: str
    deadline: Number
    created: Number | None = None
    payload: Any = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    endpoint: str = ""
    request_queue_name: str = ""
    result_queue_name: str = ""
    pubsub_id: str = ""


@dataclass(slots=True)
class Envelope:
    """A queue entry. ``source_token`` is the token derived from the raw member at decode time."""

    data: RequestData
    internal: Internal = field(default_factory=Internal)
    request_kind: str = "plain"
    source_token: str = field(default="", compare=False, repr=False)

    @property
    def id(self) -> str:
        return self.data.id

    @property
    def request_token(self) -> str:
        """The producer's token, else one derived from the member (docs/design-rules.md rule 13)."""
        if self.internal.request_token:
            return self.internal.request_token
        return self.source_token or derive_request_token(encode_envelope(self))

    @property
    def result_route(self) -> str | None:
        """The entry's own result destination, if it names one (it wins over the queue's, so
        per-request mailboxes always work)."""
        return self.internal.result_queue_name or self.data.result_queue_name or None

    def with_internal(self, **changes: Any) -> Envelope:
        """A copy with ``internal`` fields replaced; the request token is pinned first (a
        ``request_token`` among ``changes`` wins)."""
        internal = Internal(*_internal_values(self.internal))  # a copy, then the changes
        internal.request_token = self.request_token
        for name, value in changes.items():
            setattr(internal, name, value)
        return Envelope(self.data, internal, self.request_kind, self.source_token)

    def with_retry_count(self, retry_count: int) -> Envelope:
        """A copy for re-enqueueing; keeps the same request token across attempts."""
        return self.with_internal(retry_count=retry_count)


# -- decoding --------------------------------------------------------------------------------


class _Reader:
    """Typed field access that raises EntryError with the dotted path of the bad field."""

    def __init__(self, entry_id: str | None, route: str | None, token: str) -> None:
        self.entry_id = entry_id
        self.route = route
        self.token = token

    @staticmethod
    def at(path: str, key: str) -> str:
        return f"{path}.{key}" if path else key

    def fail(self, message: str) -> EntryError:
        return EntryError(
            message, entry_id=self.entry_id, result_route=self.route, request_token=self.token
        )

    def string(self, obj: Mapping[str, Any], key: str, path: str) -> str:
        value = obj.get(key, "")
        if value is None:
            return ""
        if not isinstance(value, str):
            raise self.fail(f"{self.at(path, key)} must be a string")
        return value

    def number(self, obj: Mapping[str, Any], key: str, path: str) -> Number | None:
        value = obj.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(f"{self.at(path, key)} must be a number")
        if not math.isfinite(value):
            raise self.fail(f"{self.at(path, key)} must be finite")
        return value

    def integer(self, obj: Mapping[str, Any], key: str, path: str) -> int | None:
        value = self.number(obj, key, path)
        if value is None:
            return None
        if isinstance(value, float) and not value.is_integer():
            raise self.fail(f"{self.at(path, key)} must be an integer")
        return int(value)

    def str_map(self, obj: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
        value = obj.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            raise self.fail(f"{self.at(path, key)} must be a map of strings")
        return dict(value)

    def mapping(self, obj: Mapping[str, Any], key: str, path: str) -> dict[str, Any]:
        value = obj.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(f"{self.at(path, key)} must be an object")
        return value


def _parse(member: str | bytes, token: str) -> dict[str, Any]:
    if (problem := member_problem(member)) is not None:
        raise EntryError(problem, request_token=token)
    try:
        top = json.loads(member)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise EntryError(f"not JSON: {exc}", request_token=token) from None
    if not isinstance(top, dict):
        raise EntryError("entry is not a JSON object", request_token=token)
    return top


def _identity(top: Mapping[str, Any], token: str) -> tuple[str, str | None]:
    """The entry id and own result route, or EntryError when the id cannot be read."""
    data, internal = top.get("data"), top.get("internal")
    if not isinstance(data, dict) or not isinstance(data.get("id"), str) or not data["id"]:
        raise EntryError("data.id missing or not a string", request_token=token)
    route = None
    for source in (internal, data):
        if isinstance(source, dict) and isinstance(source.get("result_queue_name"), str):
            route = route or source["result_queue_name"] or None
    return data["id"], route


def _internal(reader: _Reader, obj: Mapping[str, Any]) -> Internal:
    path = "internal"
    retry_count = reader.integer(obj, "retry_count", path) or 0
    if retry_count < 0:
        raise reader.fail("internal.retry_count must be >= 0")
    resolved = obj.get("result_routing_resolved", False)
    if not isinstance(resolved, bool):
        raise reader.fail("internal.result_routing_resolved must be a boolean")
    return Internal(
        retry_count=retry_count,
        queue_id=reader.string(obj, "queue_id", path),
        request_token=reader.string(obj, "request_token", path),
        request_queue_name=reader.string(obj, "request_queue_name", path),
        result_queue_name=reader.string(obj, "result_queue_name", path),
        transport_correlation_id=reader.string(obj, "transport_correlation_id", path),
        labels=reader.str_map(obj, "labels", path),
        result_ttl_seconds=reader.integer(obj, "result_ttl_seconds", path),
        result_routing_resolved=resolved,
        enqueued_at_ms=reader.integer(obj, "enqueued_at_ms", path),
    )


def _request_data(reader: _Reader, obj: Mapping[str, Any], path: str = "data") -> RequestData:
    deadline = reader.number(obj, "deadline", path)
    if deadline is None or deadline <= 0:
        raise reader.fail(f"{path}.deadline must be a number > 0")
    return RequestData(
        id=reader.string(obj, "id", path),
        deadline=deadline,
        created=reader.number(obj, "created", path),
        payload=obj.get("payload"),
        metadata=reader.str_map(obj, "metadata", path),
        headers=reader.str_map(obj, "headers", path),
        endpoint=reader.string(obj, "endpoint", path),
        request_queue_name=reader.string(obj, "request_queue_name", path),
        result_queue_name=reader.string(obj, "result_queue_name", path),
        pubsub_id=reader.string(obj, "pubsub_id", path),
    )


# The usual JSON types of the known fields; a field of another type (or a float where an
# integer is due) sends the entry to the checked path, which converts it or names the error.
_STR: Final = (str,)
_NUM: Final = (int, float)
_MAP: Final = (dict,)
_DATA_SHAPES: Final[Mapping[str, tuple[type, ...]]] = {
    "id": _STR,
    "deadline": _NUM,
    "created": _NUM,
    "metadata": _MAP,
    "headers": _MAP,
    "endpoint": _STR,
    "request_queue_name": _STR,
    "result_queue_name": _STR,
    "pubsub_id": _STR,
}
_INTERNAL_SHAPES: Final[Mapping[str, tuple[type, ...]]] = {
    "retry_count": (int,),
    "queue_id": _STR,
    "request_token": _STR,
    "request_queue_name": _STR,
    "result_queue_name": _STR,
    "transport_correlation_id": _STR,
    "labels": _MAP,
    "result_ttl_seconds": (int,),
    "result_routing_resolved": (bool,),
    "enqueued_at_ms": (int,),
}


def _usual(obj: Mapping[str, Any], shapes: Mapping[str, tuple[type, ...]]) -> dict[str, Any] | None:
    """The known, non-null fields of ``obj`` as keyword arguments when each is of its usual
    type (floats finite, maps of strings), so that it decodes without conversions or errors;
    None otherwise. Left-out fields take their defaults, as a null one would."""
    fields = {}
    for key, value in obj.items():
        shape = shapes.get(key)
        if shape is None or value is None:
            continue
        kind = type(value)
        if kind not in shape:
            return None
        if kind is float and not math.isfinite(value):
            return None
        if kind is dict and not all(type(v) is str for v in value.values()):
            return None
        fields[key] = value
    return fields


def _usual_envelope(top: dict[str, Any], token: str) -> Envelope | None:
    """The fast path for a well-formed entry (the usual case); None sends the entry to the
    checked path, which decodes the unusual but valid ones and raises for the bad ones.
    ``top`` was just parsed and is not shared, so its maps are kept, not copied."""
    data, internal = top.get("data"), top.get("internal")
    if internal is None:
        internal = {}
    kind = top.get("request_kind") or "plain"
    if type(data) is not dict or type(internal) is not dict or kind not in REQUEST_KINDS:
        return None
    data_fields = _usual(data, _DATA_SHAPES)
    internal_fields = _usual(internal, _INTERNAL_SHAPES)
    if data_fields is None or internal_fields is None:
        return None
    deadline = data_fields.get("deadline")
    if not data_fields.get("id") or deadline is None or deadline <= 0:
        return None
    if internal_fields.get("retry_count", 0) < 0 or (
        "result_routing_resolved" in internal and internal["result_routing_resolved"] is None
    ):
        return None
    return Envelope(
        RequestData(payload=data.get("payload"), **data_fields),
        Internal(**internal_fields),
        kind,
        token,
    )


def decode_envelope(member: str | bytes) -> Envelope:
    """Decode a sorted-set member; raises :class:`EntryError` when it breaks the contract."""
    token = derive_request_token(member)
    top = _parse(member, token)
    envelope = _usual_envelope(top, token) or _checked_envelope(top, token)
    if (problem := header_problem(envelope.data.headers)) is not None:
        raise _Reader(envelope.id, envelope.result_route, token).fail(problem)
    return envelope


def _checked_envelope(top: dict[str, Any], token: str) -> Envelope:
    """Field-by-field decoding that converts what may be converted and names a bad field."""
    entry_id, route = _identity(top, token)
    reader = _Reader(entry_id, route, token)
    kind = top.get("request_kind") or "plain"
    if kind not in REQUEST_KINDS:
        raise reader.fail(f"request_kind {kind!r} is not one of {', '.join(REQUEST_KINDS)}")
    internal = _internal(reader, reader.mapping(top, "internal", ""))
    data = _request_data(reader, top["data"])
    return Envelope(data=data, internal=internal, request_kind=kind, source_token=token)


def decode_request_data(
    body: str | bytes | Mapping[str, Any], *, attributes: Mapping[str, str] | None = None
) -> RequestData:
    """Decode a plain request object (a Pub/Sub message body); attributes merge into metadata."""
    token = derive_request_token(body) if isinstance(body, str | bytes) else ""
    obj = _parse(body, token) if isinstance(body, str | bytes) else dict(body)
    entry_id, route = _identity({"data": obj}, token)
    data = _request_data(_Reader(entry_id, route, token), obj)
    if attributes:
        data = dataclasses.replace(data, metadata={**data.metadata, **attributes})
    return data


# -- encoding --------------------------------------------------------------------------------


def _is_empty(value: Any) -> bool:
    return value is None or value is False or (isinstance(value, str | dict) and not value)


def _drop_empty(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return {key: value for key, value in pairs if not _is_empty(value)}


def _internal_obj(internal: Internal) -> dict[str, Any]:
    return _drop_empty(
        [
            ("retry_count", internal.retry_count or None),
            ("queue_id", internal.queue_id),
            ("request_token", internal.request_token),
            ("request_queue_name", internal.request_queue_name),
            ("result_queue_name", internal.result_queue_name),
            ("transport_correlation_id", internal.transport_correlation_id),
            ("labels", dict(internal.labels)),
            ("result_ttl_seconds", internal.result_ttl_seconds),
            ("result_routing_resolved", internal.result_routing_resolved),
            ("enqueued_at_ms", internal.enqueued_at_ms),
        ]
    )


def request_data_obj(data: RequestData) -> dict[str, Any]:
    """The plain JSON object of a request (compact field set, contract order)."""
    head: dict[str, Any] = {"id": data.id}
    if data.created is not None:
        head["created"] = data.created
    head["deadline"] = data.deadline
    if data.payload is not None:
        head["payload"] = data.payload
    tail = _drop_empty(
        [
            ("metadata", dict(data.metadata)),
            ("headers", dict(data.headers)),
            ("endpoint", data.endpoint),
            ("request_queue_name", data.request_queue_name),
            ("result_queue_name", data.result_queue_name),
            ("pubsub_id", data.pubsub_id),
        ]
    )
    return {**head, **tail}


# One encoder for every member (``json.dumps`` with options builds a new one per call).
_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def encode_envelope(envelope: Envelope) -> str:
    """The member string: compact JSON, keys ``internal``, ``request_kind``, ``data``."""
    obj = {
        "internal": _internal_obj(envelope.internal),
        "request_kind": envelope.request_kind,
        "data": request_data_obj(envelope.data),
    }
    return _ENCODER.encode(obj)
