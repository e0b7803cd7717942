"""Stop strings found in the deterministic generated text, cut where they begin."""

from __future__ import annotations

from sluiceway.sim.stop_strings import find_stop
from sluiceway.sim.tokenizer import detokenize_one, output_token

SALT = 12345


def _words(count: int) -> list[str]:
    return [detokenize_one(output_token(SALT, i)) for i in range(count)]


def test_a_stop_string_inside_one_token_cuts_that_token() -> None:
    words = _words(8)
    cut = find_stop(SALT, 8, [words[4].strip()])
    assert cut is not None and cut.tokens == 5
    visible = "".join(cut.text(i, w) for i, w in enumerate(words[: cut.tokens]))
    assert visible == "".join(words[:4]) + " "  # the text stops where the stop string begins


def test_a_stop_string_spanning_tokens_finishes_on_the_last_one() -> None:
    words = _words(8)
    stop = words[2][-2:] + words[3]  # the end of token 2 and all of token 3
    cut = find_stop(SALT, 8, ["zzz", stop])
    assert cut is not None and cut.tokens == 4 and cut.token == 2
    visible = "".join(cut.text(i, w) for i, w in enumerate(words[: cut.tokens]))
    assert visible == "".join(words[:3])[:-2]


def test_no_match_within_max_tokens_is_none() -> None:
    words = _words(8)
    assert find_stop(SALT, 3, [words[5] + words[6]]) is None
    assert find_stop(SALT, 8, []) is None
