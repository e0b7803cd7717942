from __future__ import annotations

from sluiceway.flowcontrol.base import Usage
from sluiceway.router.sse import SseRelay, usage_from_body

TOKEN = b'data: {"choices":[{"text":"a"}]}\n\n'
USAGE = b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2}}\n\n'
DONE = b"data: [DONE]\n\n"


def test_forwards_complete_events_and_holds_the_rest() -> None:
    relay = SseRelay(strip_usage=False)
    assert relay.feed(TOKEN[:10]) == b""
    assert relay.feed(TOKEN[10:] + DONE[:4]) == TOKEN
    assert relay.feed(DONE[4:]) == DONE
    assert relay.flush() == b""


def test_strips_the_usage_event_it_asked_for_and_keeps_the_counts() -> None:
    relay = SseRelay(strip_usage=True)
    out = relay.feed(TOKEN + USAGE[:20]) + relay.feed(USAGE[20:] + DONE)
    assert out == TOKEN + DONE
    assert relay.usage == Usage(3, 2)


def test_keeps_the_usage_event_when_the_client_asked() -> None:
    relay = SseRelay(strip_usage=False)
    assert relay.feed(TOKEN + USAGE + DONE) == TOKEN + USAGE + DONE
    assert relay.usage == Usage(3, 2)


def test_usage_inside_a_token_chunk_is_never_dropped() -> None:
    chunk = (
        b'data: {"choices":[{"text":"a"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}\n\n'
    )
    relay = SseRelay(strip_usage=True)
    assert relay.feed(chunk) == chunk
    assert relay.usage == Usage(1, 1)


def test_unterminated_tail_is_flushed_at_the_end() -> None:
    relay = SseRelay(strip_usage=False)
    assert relay.feed(b"data: x") == b""
    assert relay.flush() == b"data: x"


def test_usage_from_a_plain_body() -> None:
    assert usage_from_body(b'{"usage":{"prompt_tokens":5,"completion_tokens":7}}') == Usage(5, 7)
    assert usage_from_body(b"{}") is None
    assert usage_from_body(b'{"usage":{ broken') is None


def test_a_stream_has_ended_once_done_or_an_error_event_went_by() -> None:
    relay = SseRelay(strip_usage=False)
    relay.feed(TOKEN)
    assert not relay.ended
    relay.feed(DONE)
    assert relay.ended
    errored = SseRelay(strip_usage=False)
    errored.feed(TOKEN + b'data: {"error": {"message": "boom"}}\n\n')
    assert errored.ended
    unterminated = SseRelay(strip_usage=False)
    unterminated.feed(TOKEN + b"data:[DONE]")
    assert not unterminated.ended
    assert unterminated.flush() == b"data:[DONE]" and unterminated.ended


def test_done_inside_generated_text_is_not_the_end() -> None:
    relay = SseRelay(strip_usage=False)
    relay.feed(b'data: {"choices":[{"text":"[DONE] {\\"error\\""}]}\n\n')
    assert not relay.ended


CREATED = (
    b'event: response.created\ndata: {"type":"response.created","response":{"usage":null}}\n\n'
)
DELTA = b'event: response.output_text.delta\ndata: {"type":"response.output_text.delta"}\n\n'
COMPLETED = (
    b"event: response.completed\n"
    b'data: {"type":"response.completed","response":{"status":"completed",'
    b'"usage":{"input_tokens":9,"output_tokens":4,"total_tokens":13}}}\n\n'
)


def test_a_responses_stream_ends_with_its_last_event_and_carries_its_usage() -> None:
    relay = SseRelay(strip_usage=False)
    assert relay.feed(CREATED + DELTA) == CREATED + DELTA and not relay.ended
    assert relay.feed(COMPLETED) == COMPLETED  # passed on whole, never stripped
    assert relay.ended and relay.usage == Usage(9, 4)


def test_a_responses_stream_without_its_last_event_was_cut() -> None:
    relay = SseRelay(strip_usage=False)
    relay.feed(CREATED + DELTA + b"event: response.output_text.delta\n")
    relay.flush()
    assert not relay.ended


def test_usage_from_a_plain_responses_body() -> None:
    body = b'{"object":"response","usage":{"input_tokens":5,"output_tokens":7}}'
    assert usage_from_body(body) == Usage(5, 7)
    embeddings = b'{"object":"list","usage":{"prompt_tokens":8,"total_tokens":8}}'
    assert usage_from_body(embeddings) == Usage(8, 0)
