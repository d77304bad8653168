"""Tests of the selection interface: working sets drawn by the selectors' sampling schemes."""

import numpy as np
import pytest

from skgpsparse.selection import GreedySelector


class _WeightedState:
    """A stand-in state with fixed adaptive-sampling weights."""

    def __init__(self, weights):
        self.weights = np.asarray(weights, dtype=float)

    def candidates(self):
        return np.arange(self.weights.size)

    def sampling_weights(self, J):
        return self.weights[J]


@pytest.mark.parametrize("rng_kind", ["legacy", "generator"])
def test_weighted_working_set_follows_the_weights(rng_kind):
    # additive-model paper eq. (11): the working set is drawn with probabilities w / sum(w);
    # a zero weight is never drawn, and two draws are distinct.
    weights = np.array([0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 10.0])
    state = _WeightedState(weights)
    selector = GreedySelector("nlp_all", 1, sampling="weighted")
    rng = np.random.RandomState(0) if rng_kind == "legacy" else np.random.default_rng(0)
    draws = np.array([selector.working_set(state, rng)[0] for _ in range(20_000)])
    freq = np.bincount(draws, minlength=weights.size) / draws.size
    expected = weights / weights.sum()
    # binomial standard error <= 0.0036 at 20,000 draws: 4 standard errors
    np.testing.assert_allclose(freq, expected, atol=0.015)
    assert freq[0] == 0 and freq[5] == 0
    pairs = [
        GreedySelector("nlp_all", 2, sampling="weighted").working_set(state, rng)
        for _ in range(200)
    ]
    assert all(len(set(p)) == 2 and 0 not in p and 5 not in p for p in pairs)


@pytest.mark.parametrize("weights", [[1.0, 2.0, 3.0, 4.0], [1e9, 1.0, 0.0, 2.0]])
def test_weighted_pairs_are_successive_draws_without_replacement(weights):
    # P(first = i, second = j) = w_i / W * w_j / (W - w_i): the pairs of a kappa = 2 working
    # set, also when one weight holds nearly all the mass (the redraws give up and the
    # weights drawn so far are zeroed)
    from skgpsparse.selection import _weighted_draws

    w = np.array(weights)
    rng = np.random.RandomState(1)
    n_draws = 20_000
    counts = np.zeros((w.size, w.size))
    for _ in range(n_draws):
        i, j = _weighted_draws(w, 2, rng)
        counts[i, j] += 1
    W = w.sum()
    expected = (w[:, None] / W) * (w[None, :] / (W - w[:, None]))
    np.fill_diagonal(expected, 0.0)
    # binomial standard error <= 0.0036 at 20,000 draws: 4 standard errors
    np.testing.assert_allclose(counts / n_draws, expected, atol=0.015)
    assert np.all(np.diag(counts) == 0) and np.all(counts[:, w == 0] == 0)


@pytest.mark.parametrize("n", [12, 5])
def test_uniform_draws_are_successive_draws_without_replacement(n):
    # every ordered pair (i, j), i != j, of a kappa = 2 working set has probability
    # 1 / (n (n - 1)); n = 12 drops repeats and draws again, n = 5 (2 > n / 4) takes the
    # permutation fallback
    from skgpsparse.selection import _uniform_draws

    rng = np.random.RandomState(2)
    n_draws = 20_000
    counts = np.zeros((n, n))
    for _ in range(n_draws):
        i, j = _uniform_draws(n, 2, rng)
        counts[i, j] += 1
    expected = np.full((n, n), 1.0 / (n * (n - 1)))
    np.fill_diagonal(expected, 0.0)
    # binomial standard error <= 0.0016 at 20,000 draws: 4 standard errors
    np.testing.assert_allclose(counts / n_draws, expected, atol=0.0065)
    draws = _uniform_draws(1000, 200, rng)
    assert len(set(draws.tolist())) == 200 and draws.min() >= 0 and draws.max() < 1000
