"""When the all-rows fit's rounds of selection and learning stop (_all_rows_fit._rounds).

The rounds stop when a round gains less than ``tol`` in the evidence per row, or, before the
round that would only confirm that, when the gain predicted from the last two gains by their
geometric decrease (``g_k^2 / g_(k-1)``) is below ``tol``. Each test runs the rounds with stub
steps whose losses are given, with and without the prediction, and compares the decisions.
"""

from types import SimpleNamespace

import numpy as np
import pytest

import skgpsparse.latent.learning._ep_rounds as all_rows_fit
from skgpsparse.likelihoods import Probit


def _run(losses, monkeypatch, predict, previous=None, tol=1e-3):
    """``(rounds run, kept loss)`` of :func:`_rounds` whose k-th learn returns ``losses[k]``."""
    monkeypatch.setattr(all_rows_fit, "PREDICT_GAIN", predict)
    model = SimpleNamespace(loss_curve_=[], tol=tol, optimizer="fmin_l_bfgs_b",
                            _progress=SimpleNamespace(line=lambda text: None),
                            _last_exchange_curve=[], likelihood=Probit())
    values = iter(losses)

    def select(model, kernel, X, y, bias, rng):
        return np.arange(3)

    def learn(model, kernel, bias, sites, X, y, basis, stop=None):
        return next(values), kernel, bias, sites

    best, rounds = all_rows_fit._rounds(model, None, 0.0, None, None, None, None, len(losses),
                                        select=select, learn=learn, previous=previous)
    assert model.loss_curve_ == losses[:rounds]
    return rounds, best[0]


def test_the_predicted_gain_skips_the_confirming_round(monkeypatch):
    # gains 0.05, 0.01, 0.002, 0.0005: the third gain predicts 0.002^2 / 0.01 = 4e-4 < tol,
    # so the fourth round (gain 5e-4 < tol, where the full rounds stop) is not run
    losses = [0.5, 0.45, 0.44, 0.438, 0.4375, 0.4374]
    assert _run(losses, monkeypatch, predict=False) == (5, 0.4375)
    rounds, kept = _run(losses, monkeypatch, predict=True)
    assert rounds == 4 and kept == 0.438
    assert kept - 0.4375 < 1e-3  # what the skipped round would have added: less than tol


def test_the_loss_before_the_rounds_counts_as_a_gain(monkeypatch):
    # the per-feature trial's first learn, then its rounds (pmlb adult's losses): with the
    # first learn's loss two gains exist after two rounds (0.0057, 0.0012: predicted 2.5e-4)
    losses = [0.319128, 0.317941, 0.317766]
    assert _run(losses, monkeypatch, predict=True, previous=0.324822) == (2, 0.317941)
    assert _run(losses, monkeypatch, predict=True) == (3, 0.317766)
    assert _run(losses, monkeypatch, predict=False, previous=0.324822) == (3, 0.317766)


@pytest.mark.parametrize("losses", [
    [0.5, 0.49, 0.47, 0.44, 0.4399],  # growing gains: predicted larger than the last
    [0.5, 0.4, 0.41, 0.3995],  # a round that lost: no geometric decrease to extrapolate
    [0.5, 0.4, 0.3, 0.2995],  # equal gains
])
def test_no_prediction_without_two_decreasing_gains(losses, monkeypatch):
    full = _run(losses, monkeypatch, predict=False)
    assert _run(losses, monkeypatch, predict=True) == full


def test_next_gain_small_is_the_geometric_extrapolation():
    small = all_rows_fit.next_gain_small
    assert small([1.0, 0.9, 0.88], 1e-3) is False  # 0.02^2 / 0.1 = 4e-3
    assert small([1.0, 0.9, 0.895], 1e-3) is True  # 0.005^2 / 0.1 = 2.5e-4
    assert small([1.0, 0.9, 0.895], 1e-4) is False
    assert small([0.9, 0.8901], 1e-3) is False  # one gain only
