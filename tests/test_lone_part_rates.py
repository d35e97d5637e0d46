"""scripts/lone_part_rates.py: lone conjunction words per word against neutral words per word, causes excluded."""

from __future__ import annotations

import importlib.util
import math

from halbench.tasks.registry import REPO_ROOT

spec = importlib.util.spec_from_file_location("lone_part_rates", REPO_ROOT / "scripts" / "lone_part_rates.py")
rates = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rates)


def record(tokens: list[str], causes: list[int], decoys: list[int] = ()) -> dict:
    return {"prompt_tokens": tokens, "editable": list(range(len(tokens))), "causes": [causes], "decoys": list(decoys)}


def test_the_ratio_counts_lone_words_and_neutral_words_per_word_and_skips_causes_and_placed_parts():
    conjunction, neutral = {"a", "b", "c", "d"}, {"x", "y"}
    records = [
        record(["a", "x", "b", "y"], causes=[0, 2]),  # the cause's own words are not lone parts
        record(["c", "x", "d", "y"], causes=[], decoys=[2]),  # c is lone filler; d is a placed (inert) part
    ]
    # one lone occurrence over 4 conjunction words, against 4 neutral occurrences over 2 neutral words
    assert math.isclose(rates.rate_ratio(records, conjunction, neutral), (1 / 4) / (4 / 2))


def test_no_filler_or_no_such_word_gives_nan_not_an_error():
    assert math.isnan(rates.rate_ratio([], {"a"}, {"x"}))
    assert math.isnan(rates.rate_ratio([record(["x"], causes=[])], set(), {"x"}))  # a world without singles
