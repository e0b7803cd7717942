"""The stand-in tokenizer: deterministic ids, one word per generated token."""

from __future__ import annotations

import orjson

from sluiceway.sim.tokenizer import (
    chat_prompt,
    detokenize_one,
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


def test_word_json_is_the_json_of_the_word() -> None:
    for token in range(200):
        assert orjson.loads(word_json(token)) == detokenize_one(token)
        assert detokenize_one(token).startswith(" ")


def test_chat_prompt_marks_roles() -> None:
    text = chat_prompt([{"role": "user", "content": [{"type": "text", "text": "hi"}]}])
    assert text == "<|user|>\nhi\n<|assistant|>"
