"""Same case, method, seed and task: bit-identical numbers whatever the batch composition or thread count."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from halbench.runtime import configure_threads, power_of_two_at_most


@pytest.fixture()
def rows(tiny_bundle):
    record = tiny_bundle.cases("test")[0]
    scorer = tiny_bundle.scorer(record, budget=None)
    perturbed, _ = scorer.perturb(np.random.default_rng(0), 70, 0.5)
    return record, perturbed


def logprobs(bundle, record, rows, batch_rows=256):
    return bundle.scorer(record, budget=None, batch_rows=batch_rows).target_logprob(rows)


def test_a_row_scores_the_same_alone_or_in_any_batch(tiny_bundle, rows):
    record, perturbed = rows
    together = logprobs(tiny_bundle, record, perturbed)
    alone = np.concatenate([logprobs(tiny_bundle, record, perturbed[i : i + 1]) for i in range(5)])
    assert np.array_equal(together[:5], alone)
    for batch_rows in (32, 64, 96):
        assert np.array_equal(logprobs(tiny_bundle, record, perturbed, batch_rows), together)
    shuffled = np.random.default_rng(1).permutation(len(perturbed))
    assert np.array_equal(logprobs(tiny_bundle, record, perturbed[shuffled]), together[shuffled])


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_thread_counts_do_not_change_the_numbers(tiny_bundle, rows, threads):
    record, perturbed = rows
    before = torch.get_num_threads()
    try:
        configure_threads(1)
        reference = logprobs(tiny_bundle, record, perturbed)
        configure_threads(threads)
        assert np.array_equal(logprobs(tiny_bundle, record, perturbed), reference)
        scorer = tiny_bundle.scorer(record, budget=None)
        value, grad = scorer.logprob_and_grad(scorer.input_embeddings())
        configure_threads(1)
        value1, grad1 = tiny_bundle.scorer(record, budget=None).logprob_and_grad(scorer.input_embeddings())
        assert torch.equal(value, value1) and torch.equal(grad, grad1)
    finally:
        torch.set_num_threads(before)


def test_thread_counts_are_powers_of_two():
    assert [power_of_two_at_most(n) for n in (1, 2, 3, 5, 8, 15, 16)] == [1, 2, 2, 4, 8, 8, 16]
