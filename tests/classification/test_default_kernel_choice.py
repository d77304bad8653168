"""The default kernel's choice between one length scale and one per feature (_all_rows_fit).

With ``kernel=None`` the classifier fits ``C(1) * RBF(sqrt(d))``, then the same with one length
scale per feature, and keeps the latter only when its EP log evidence exceeds the shared
length scale's by half the BIC charge, ``(d - 1) / 4 * log(n)``.
"""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, Matern
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.metrics import log_loss

import skgpsparse.latent.learning._ep_rounds as all_rows_fit
from skgpsparse import SparseGPClassifier
from skgpsparse.classification._fitting import default_kernel
from skgpsparse.kernels._scales import per_feature_length_scales


def _irrelevant_features(n, seed=0):
    """A circle in the first two features; six features of pure noise."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n + 1000, 8)
    y = (X[:, 0] ** 2 + X[:, 1] ** 2 + 0.3 * rng.randn(n + 1000) > 1.4).astype(int)
    return X[:n], y[:n], X[n:], y[n:]


def _isotropic(n, seed=0):
    """Labels from a noisy linear score of every feature alike."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n + 1000, 6)
    y = (X.sum(axis=1) + 1.5 * rng.randn(n + 1000) > 0).astype(int)
    return X[:n], y[:n], X[n:], y[n:]


def _fit(X, y, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return SparseGPClassifier(max_basis=40, random_state=0, **kwargs).fit(X, y)


def _length_scale(model):
    return np.atleast_1d(model.kernel_.k2.length_scale)


def test_per_feature_length_scales_start_at_the_same_kernel():
    X = np.random.RandomState(0).randn(7, 3)
    kernel = C(2.0) * Matern(1.5, nu=1.5)
    ard = per_feature_length_scales(kernel, 3)
    np.testing.assert_allclose(ard.k2.length_scale, [1.5, 1.5, 1.5])
    np.testing.assert_allclose(ard(X), kernel(X), rtol=1e-14)
    assert ard.n_dims == kernel.n_dims + 2
    assert kernel.k2.length_scale == 1.5  # the original is not modified
    # nothing to make per feature: one feature, ARD already, or a fixed length scale
    assert per_feature_length_scales(kernel, 1) is None
    assert per_feature_length_scales(C(1.0) * RBF([1.0, 2.0]), 2) is None
    assert per_feature_length_scales(RBF(1.0, length_scale_bounds="fixed"), 3) is None


def test_irrelevant_features_get_their_own_length_scales_and_a_better_test_nlp():
    X, y, X_test, y_test = _irrelevant_features(600)
    chosen = _fit(X, y)
    shared = _fit(X, y, kernel=default_kernel(X.shape[1]))  # the same kernel, no choice
    scales = _length_scale(chosen)
    assert scales.shape == (8,) and _length_scale(shared).shape == (1,)
    # the noise features are smoothed away, the circle's two are not
    assert scales[2:].min() > 3 * scales[:2].max()
    nlp = log_loss(y_test, chosen.predict_proba(X_test))
    assert nlp < 0.9 * log_loss(y_test, shared.predict_proba(X_test))


def test_isotropic_problem_keeps_one_length_scale():
    X, y, _, _ = _isotropic(150)
    assert _length_scale(_fit(X, y)).shape == (1,)


def test_the_choice_follows_the_bic_charge(monkeypatch):
    X, y, _, _ = _isotropic(150)
    monkeypatch.setattr(all_rows_fit, "bic_charge", lambda n_extra, n: 0.0)
    # without a charge the per-feature evidence (never below the shared one's) wins
    assert _length_scale(_fit(X, y)).shape == (6,)
    monkeypatch.setattr(all_rows_fit, "bic_charge", lambda n_extra, n: np.inf)
    X, y, _, _ = _irrelevant_features(600)
    assert _length_scale(_fit(X, y)).shape == (1,)


def test_bic_charge():
    assert all_rows_fit.bic_charge(5, 100) == pytest.approx(2.5 * np.log(100))


def test_a_users_kernel_and_fixed_hyperparameters_are_left_alone():
    X, y, _, _ = _irrelevant_features(600)
    user = _fit(X, y, kernel=C(1.0) * RBF(1.0))
    assert _length_scale(user).shape == (1,)
    fixed = _fit(X, y, optimizer=None)
    assert fixed.kernel_ == default_kernel(X.shape[1])
    # the basis posterior's NLP objective does not take part
    assert _length_scale(_fit(X, y, posterior="basis", max_iter=2)).shape == (1,)


def test_one_vs_rest_models_may_choose_differently(monkeypatch):
    # the first binary model's trial is free, the others' never pay: kernels of two sizes
    charges = iter([0.0])
    monkeypatch.setattr(all_rows_fit, "bic_charge", lambda n_extra, n: next(charges, np.inf))
    X, y01, _, _ = _irrelevant_features(300)
    y = np.where(X[:, 2] > 0.5, 2, y01)
    model = _fit(X, y, multi_class="independent")  # (the shared fit decides once)
    sizes = [k.n_dims for k in model.kernels_]
    assert sizes == [9, 2, 2], model.kernels_
    thetas = np.concatenate([k.theta for k in model.kernels_])
    value = model.log_marginal_likelihood(thetas)
    expected = np.mean([
        est.log_marginal_likelihood(k.theta) for est, k in zip(model.estimators_, model.kernels_)
    ])
    assert value == pytest.approx(expected, rel=1e-12)
    with pytest.raises(ValueError, match="every class's, stacked"):
        model.log_marginal_likelihood(model.kernels_[1].theta)


def _decision_and_exits(monkeypatch, X, y, safety):
    """The fitted kernel's number of length scales and whether the first learn stopped early,
    with the charge bound's safety factor ``safety`` (inf: never stops)."""
    import skgpsparse.latent.learning._charge_bound as charge_bound

    made = []

    class Spy(charge_bound.ChargeBound):
        def __init__(self, *args):
            super().__init__(*args)
            made.append(self)

    monkeypatch.setattr(charge_bound, "SAFETY", safety)
    monkeypatch.setattr(charge_bound, "ChargeBound", Spy)  # ChargeStop makes them
    monkeypatch.setattr(all_rows_fit, "_round_bound", lambda best, tol: None)  # the trial's only
    return _length_scale(_fit(X, y)).size, [bound.stopped for bound in made]


def test_the_early_exit_reaches_the_full_trials_decision(monkeypatch):
    # where the trial cannot pay, its first learn is cut short with the full trial's answer
    X, y, _, _ = _isotropic(150)
    assert _decision_and_exits(monkeypatch, X, y, np.inf) == (1, [False])
    assert _decision_and_exits(monkeypatch, X, y, 10.0) == (1, [True])
    # where it pays (the full trial's answer: test_irrelevant_features_get_their_own_...),
    # it runs on
    X, y, _, _ = _irrelevant_features(600)
    assert _decision_and_exits(monkeypatch, X, y, 10.0) == (8, [False])


@pytest.mark.parametrize("data", [_isotropic(150), _irrelevant_features(300)])
def test_a_confirming_round_is_cut_short_with_the_same_fit(monkeypatch, data):
    # a round after the first whose L-BFGS-B run cannot get tol below the best round stops
    # early (_round_bound); it ends the rounds, as the full run's round would, and the fit
    # keeps the same round: the same kernel to the search's tolerance, the same decision
    import skgpsparse.latent.learning._charge_bound as charge_bound

    X, y, _, _ = data
    stops = []

    class Spy(charge_bound.ChargeBound):
        def __call__(self, intermediate_result):
            try:
                super().__call__(intermediate_result)
            except StopIteration:
                stops.append(self.needed)
                raise

    monkeypatch.setattr(charge_bound, "ChargeBound", Spy)  # ChargeStop makes them
    bounded = _fit(X, y)
    assert 1e-3 in stops  # model.tol: a round's run was stopped
    monkeypatch.setattr(all_rows_fit, "_round_bound", lambda best, tol: None)
    full = _fit(X, y)
    assert bounded.n_iter_ == full.n_iter_
    np.testing.assert_allclose(bounded.kernel_.theta, full.kernel_.theta, atol=5e-3)
    assert bounded.bias_ == pytest.approx(full.bias_, abs=0.05)


def test_the_lbfgs_model_decrease_is_newtons_on_a_quadratic():
    # pairs along the eigenvectors of A (conjugate directions): the two-loop inverse Hessian
    # is A^-1, and the model's decrease 0.5 g^T A^-1 g that of the quadratic to its minimum
    from skgpsparse.latent.learning._charge_bound import lbfgs_model_decrease

    rng = np.random.RandomState(0)
    Q, _ = np.linalg.qr(rng.randn(5, 5))
    A = Q @ np.diag([0.5, 1.0, 2.0, 5.0, 9.0]) @ Q.T
    pairs = [(Q[:, i], A @ Q[:, i]) for i in range(5)]
    g = rng.randn(5)
    assert lbfgs_model_decrease(g, pairs) == pytest.approx(0.5 * g @ np.linalg.solve(A, g))
    assert lbfgs_model_decrease(g, [(Q[:, 0], -Q[:, 0])]) == np.inf  # no curvature pair


def test_the_trial_charges_half_the_bic(capsys):
    # (d - 1) / 4 * log(n) nats: the decision line of verbose=1 prints the charge it used
    import re

    X, y, _, _ = _irrelevant_features(600)
    _fit(X, y, verbose=1)
    lines = [line for line in capsys.readouterr().out.splitlines()
             if "one length scale per feature: log evidence" in line]
    assert len(lines) == 1, lines
    charge = float(re.search(r"charge ([0-9.]+)", lines[0]).group(1))
    assert all_rows_fit.CHARGE_FACTOR == 0.5
    assert charge == pytest.approx(7 / 4 * np.log(600), abs=0.006)


def test_a_noise_only_length_scale_is_not_copied_to_the_trial():
    # a kept round whose one length scale leaves the rows uncorrelated (the Student-t on
    # pumadyn32nm: RBF(1.24) on 32 standardised features) starts the per-feature trial at
    # the data's scale, not at copies of it (from which the rows would stay noise); any
    # other kernel starts at its copies (the same kernel, so the evidence can only rise)
    from skgpsparse.kernels._scales import data_scaled_start, rows_uncorrelated
    from skgpsparse.latent._model import LatentSparseGP

    X = np.random.RandomState(0).randn(300, 20)
    y = np.where(X[:, 0] > 0, 1.0, -1.0)
    model = LatentSparseGP(C(1.0) * RBF(1.0), 10, None, "fmin_l_bfgs_b", 3, 1e-4, 0,
                           posterior="all_rows")
    model.loss_curve_ = []
    seen = []

    def learn(model, kernel, bias, sites, X, y, basis, stop=None):
        seen.append(kernel)
        return 1.0, kernel, bias, sites  # no gain: the trial ends after its first learn

    for scalar, uncorrelated in ((0.5, True), (5.0, False)):
        kernel = C(1.0) * RBF(scalar)
        assert rows_uncorrelated(kernel, X) is uncorrelated
        best = (0.5, kernel, 0.0, np.arange(10), (None, None), [], model.likelihood)
        kept, _ = all_rows_fit._per_feature_choice(model, best, X, y, None, 3, learn=learn)
        assert kept is best  # not kept: no gain
        start = seen[-1].k2.length_scale
        copies = per_feature_length_scales(kernel, 20).k2.length_scale
        if uncorrelated:
            want = data_scaled_start(per_feature_length_scales(kernel, 20), X).k2.length_scale
            np.testing.assert_allclose(start, want)
            assert np.all(start > 3.0 * scalar)
        else:
            np.testing.assert_array_equal(start, copies)
