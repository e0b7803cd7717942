"""The stand-in tokenizer: deterministic ids, one word per generated token, and generated text
that tokenizes back to its own ids after any prompt (so resumes hit the prefix cache)."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from sluiceway.sim.tokenizer import (
    chat_prompt,
    detokenize,
    detokenize_one,
    nearby_token,
    output_salt,
    output_token,
    tokenize,
    word_json,
)


def test_same_text_same_ids_and_words_and_marks_are_tokens() -> None:
    assert tokenize("Hello, world") == tokenize("Hello, world")
    assert len(tokenize("Hello, world")) == 3


def test_generated_text_depends_on_seed_and_prompt_only() -> None:
    salt = output_salt(1, (5, 6))
    assert salt == output_salt(1, (5, 6)) != output_salt(2, (5, 6))
    assert [output_token(salt, i) for i in range(3)] == [output_token(salt, i) for i in range(3)]


def _generated(salt: int, count: int) -> list[int]:
    return [output_token(salt, i) for i in range(count)]


def test_word_json_is_the_json_of_the_word() -> None:
    for token in [*range(200), *_generated(7, 200)]:
        assert orjson.loads(word_json(token)) == detokenize_one(token)
        assert detokenize_one(token).startswith(" ")


def test_chat_prompt_marks_roles() -> None:
    text = chat_prompt([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    assert text == "<|user|>\nhi\n<|assistant|>"


def test_vocabulary_words_are_one_token_each_with_distinct_ids() -> None:
    ids = [tuple(tokenize(detokenize_one(t))) for t in _generated(3, 2000)]
    assert all(len(i) == 1 for i in ids)
    words = {detokenize_one(t) for t in _generated(3, 2000)}
    assert len({tokenize(w)[0] for w in words}) == len(words) > 50


@given(salt=st.integers(0, 2**31 - 1), count=st.integers(0, 300))
def test_generated_text_tokenizes_back_to_its_ids(salt: int, count: int) -> None:
    ids = _generated(salt, count)
    assert tokenize(detokenize(ids)) == ids


@given(prompt=st.text(), salt=st.integers(0, 2**31 - 1), count=st.integers(0, 40))
def test_a_prompt_tokenizes_alike_alone_and_followed_by_generated_text(
    prompt: str, salt: int, count: int
) -> None:
    ids = _generated(salt, count)
    assert tokenize(prompt + detokenize(ids)) == tokenize(prompt) + ids


def test_only_a_join_inside_a_word_merges_tokens() -> None:
    assert tokenize("sluice" + "way") != tokenize("sluice") + tokenize("way")
    for left, right in [("sluice", " way"), ("sluice.", "way"), ("sluice", "-way"), ("a\n", "b")]:
        assert tokenize(left + right) == tokenize(left) + tokenize(right)


def test_a_resumed_chat_shares_the_original_prompt_and_output() -> None:
    """Messages plus the partial answer as an assistant message: the original prompt's tokens
    and the generated ones come first, then the new generation marker."""
    messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi!"}]
    prompt = tokenize(chat_prompt(messages))
    output = _generated(output_salt(0, tuple(prompt)), 30)
    partial = {"role": "assistant", "content": detokenize(output)}
    resumed = tokenize(chat_prompt([*messages, partial]))
    assert resumed[: len(prompt) + len(output)] == prompt + output
    assert resumed[len(prompt) + len(output) :] == tokenize("<|assistant|>")


def test_nearby_tokens_are_other_generated_words() -> None:
    token = output_token(11, 0)
    near = [nearby_token(token, step) for step in range(1, 21)]
    texts = {detokenize_one(t) for t in near}
    assert len(texts) == 20 and detokenize_one(token) not in texts
    assert all(tokenize(detokenize_one(t)) == [t] for t in near)
    assert nearby_token(5, 1) == nearby_token(5, 1)  # any id, e.g. from a token-id prompt
