"""Code written for scikit-learn's GPs, run on the sparse estimators (issue 37, items 1, 2, 3,
5 and 7). scikit-learn's own ``GaussianProcessRegressor`` / ``GaussianProcessClassifier`` is
the reference, in the full-basis limit (every training row in the basis) where it applies.
"""

import warnings

import numpy as np
import pytest
from sklearn.datasets import make_moons
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, CompoundKernel, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPClassifier, SparseGPRegressor


def _regression(n=30, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 1))
    return X, 5.0 + 3.0 * np.sin(X[:, 0]) + 0.3 * rng.randn(n)


def _moons(n=40):
    return make_moons(n_samples=n, noise=0.2, random_state=0)


# ---------------------------------------------------------------- item 1: clone_kernel=False
def _fitted_pairs():
    X, y = _regression()
    kernel = C(1.0) * RBF(1.0)
    Xc, yc = _moons()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [
            (SparseGPRegressor(kernel, max_basis=30, optimizer=None).fit(X, y),
             GaussianProcessRegressor(kernel, alpha=1e-2, optimizer=None).fit(X, y)),
            (SparseGPClassifier(kernel, max_basis=40, optimizer=None).fit(Xc, yc),
             GaussianProcessClassifier(kernel, optimizer=None).fit(Xc, yc)),
        ]


@pytest.mark.parametrize("index", [0, 1], ids=["regressor", "classifier"])
def test_clone_kernel_false_leaves_kernel_at_theta_as_scikit_learn(index):
    ours, theirs = _fitted_pairs()[index]
    theta = np.log([2.0, 0.7])
    for model in (ours, theirs):
        start = model.kernel_.theta.copy()
        value = model.log_marginal_likelihood(theta)  # clone_kernel=True: kernel_ stays
        np.testing.assert_array_equal(model.kernel_.theta, start)
        again = model.log_marginal_likelihood(theta, clone_kernel=False)
        np.testing.assert_allclose(model.kernel_.theta, theta, rtol=0, atol=1e-12)
        assert again == pytest.approx(value, rel=1e-10)  # the same evaluation either way


def test_clone_kernel_false_sets_every_one_vs_rest_kernel():
    X, y = _moons(60)
    y = np.where(X[:, 0] > 1.0, 2, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = SparseGPClassifier(C(1.0) * RBF(1.0), max_basis=60, optimizer=None).fit(X, y)
        theirs = GaussianProcessClassifier(C(1.0) * RBF(1.0), optimizer=None).fit(X, y)
    stacked = np.log([2.0, 0.5, 1.0, 0.7, 3.0, 1.5])
    ours.log_marginal_likelihood(stacked, clone_kernel=False)
    theirs.log_marginal_likelihood(stacked, clone_kernel=False)
    expected = stacked.reshape(3, 2)
    for k, est in enumerate(theirs.base_estimator_.estimators_):
        np.testing.assert_allclose(est.kernel_.theta, expected[k], atol=1e-12)
    for k, kernel in enumerate(ours.kernels_):
        np.testing.assert_allclose(kernel.theta, expected[k], atol=1e-12)
        assert kernel is ours.estimators_[k].kernel_


def test_regressor_clone_kernel_false_with_the_noise_entry_sets_the_kernel_part():
    ours, _ = _fitted_pairs()[0]
    theta = np.log([2.0, 0.7, 0.05])  # kernel's theta, then log noise variance
    ours.log_marginal_likelihood(theta, clone_kernel=False)
    np.testing.assert_allclose(ours.kernel_.theta, theta[:2], atol=1e-12)
    assert ours.noise_variance_ == 1e-2  # the fitted noise variance stays


# ------------------------------------------------ item 3: normalize_y, fixed hyperparameters
@pytest.mark.parametrize("max_basis", [40, 12])
def test_normalize_y_with_fixed_hyperparameters_is_fitting_standardised_targets(max_basis):
    X, y = _regression(40)
    y = np.column_stack([y, 100.0 - 20.0 * y]) if max_basis == 12 else y
    Xt = np.linspace(-4, 4, 9)[:, None]
    kernel = C(2.0) * RBF(1.5)
    params = dict(noise_variance=0.1, optimizer=None, max_basis=max_basis, random_state=0)
    model = SparseGPRegressor(kernel, normalize_y=True, **params).fit(X, y)
    mean, std = model.predict(Xt, return_std=True)
    y_mean, y_std = y.mean(axis=0), y.std(axis=0)
    by_hand = SparseGPRegressor(kernel, **params).fit(X, (y - y_mean) / y_std)
    mean_h, std_h = by_hand.predict(Xt, return_std=True)
    std_h = std_h * y_std
    np.testing.assert_allclose(mean, mean_h * y_std + y_mean, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(std, std_h, rtol=1e-10, atol=1e-12)
    if max_basis >= len(X):  # the full basis: scikit-learn's GPR itself
        gpr = GaussianProcessRegressor(kernel, alpha=0.1, optimizer=None, normalize_y=True)
        mean_s, std_s = gpr.fit(X, y).predict(Xt, return_std=True)
        np.testing.assert_allclose(mean, mean_s, rtol=1e-8, atol=1e-8)
        np.testing.assert_allclose(std, std_s, rtol=1e-8, atol=1e-8)


# ----------------------------------------------------------- item 2: warnings at bounds
def _convergence_warnings(model, X, y):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        model.fit(X, y)
    return [str(w.message) for w in record if issubclass(w.category, ConvergenceWarning)]


_BOUND_X = np.atleast_2d([1.0, 3.0, 5.0, 6.0, 7.0, 8.0]).T  # scikit-learn's test_warning_bounds
_BOUND_CASES = [
    (RBF(length_scale_bounds=[1e-5, 1e-3]), _BOUND_X),
    (WhiteKernel(noise_level_bounds=[1e-5, 1e-3]) + RBF(length_scale_bounds=[1e3, 1e5]),
     _BOUND_X),
    (RBF(length_scale=[1.0, 2.0], length_scale_bounds=[1e1, 1e2]), np.tile(_BOUND_X, 2)),
]


@pytest.mark.parametrize("case", range(3), ids=["upper", "white_sum", "per_feature"])
@pytest.mark.parametrize("noise_variance", [1e-10, 1e-2])
def test_bound_warnings_are_scikit_learns(case, noise_variance):
    kernel, X = _BOUND_CASES[case]
    y = (_BOUND_X * np.sin(_BOUND_X)).ravel()
    expected = _convergence_warnings(GaussianProcessRegressor(kernel), X, y)
    got = _convergence_warnings(
        SparseGPRegressor(kernel, noise_variance=noise_variance, max_basis=len(y)), X, y
    )
    assert got == expected and len(expected) in (1, 2)


# ---------------------------------------------- item 5: scikit-learn's refusals, alpha=0
@pytest.mark.parametrize("white_first", [False, True])
@pytest.mark.parametrize("optimizer", [None, "fmin_l_bfgs_b"])
def test_noise_variance_zero_with_a_white_kernel_is_scikit_learns_alpha_zero(
    optimizer, white_first
):
    X, y = _regression(30)
    white = WhiteKernel(0.1)
    kernel = white + C(1.0) * RBF(1.0) if white_first else C(1.0) * RBF(1.0) + white
    Xt = np.linspace(-4, 4, 9)[:, None]
    theirs = GaussianProcessRegressor(kernel, alpha=0.0, optimizer=optimizer).fit(X, y)
    ours = SparseGPRegressor(kernel, noise_variance=0, max_basis=30, optimizer=optimizer)
    ours.fit(X, y)
    assert ours.noise_variance_ == 0.0
    np.testing.assert_allclose(ours.kernel_.theta, theirs.kernel_.theta, atol=1e-4)
    for a, b in zip(ours.predict(Xt, return_std=True), theirs.predict(Xt, return_std=True)):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-5)
    theta = theirs.kernel_.theta
    value, grad = ours.log_marginal_likelihood(theta, eval_gradient=True)
    value_s, grad_s = theirs.log_marginal_likelihood(theta, eval_gradient=True)
    assert value == pytest.approx(value_s, rel=1e-6)
    np.testing.assert_allclose(grad, grad_s, atol=1e-4)


def test_noise_variance_zero_without_a_white_kernel_is_refused_by_name():
    X, y = _regression()
    with pytest.raises(ValueError, match="noise_variance=0 needs a WhiteKernel"):
        SparseGPRegressor(C(1.0) * RBF(1.0), noise_variance=0, max_basis=10).fit(X, y)


@pytest.mark.parametrize("kernels", [[RBF(), RBF()], 0])
def test_classifier_refuses_a_compound_kernel_as_scikit_learn(kernels):
    # CompoundKernel(0) is scikit-learn's own test case: not even its repr works
    X, y = _moons()
    with pytest.raises(ValueError, match="kernel cannot be a CompoundKernel"):
        GaussianProcessClassifier(CompoundKernel(kernels)).fit(X, y)
    with pytest.raises(ValueError, match="kernel cannot be a CompoundKernel"):
        SparseGPClassifier(CompoundKernel(kernels), max_basis=10).fit(X, y)


def test_log_marginal_likelihood_is_a_numpy_float_as_scikit_learn():
    # under NumPy 2's promotion rules a Python float compared with np.float32 stays float32:
    # scikit-learn's tests compare `lml > last - np.float32(eps)`
    X, y = _moons()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = SparseGPClassifier(max_basis=10, random_state=0).fit(X, y)
        reg = SparseGPRegressor(max_basis=10, random_state=0).fit(X, y.astype(float))
    for model in (clf, reg):
        theta = model.kernel_.theta
        assert isinstance(model.log_marginal_likelihood(), np.float64)
        assert isinstance(model.log_marginal_likelihood(theta), np.float64)
        value, grad = model.log_marginal_likelihood(theta, eval_gradient=True)
        assert isinstance(value, np.float64) and grad.shape == theta.shape


def test_latent_mean_and_variance_refuses_more_than_two_classes_as_scikit_learn():
    X, y = _moons(45)
    y = np.where(X[:, 0] > 1.0, 2, y)
    message = "only supported for binary classification, received 3 classes"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs = GaussianProcessClassifier(optimizer=None).fit(X, y)
        ours = SparseGPClassifier(max_basis=10, optimizer=None).fit(X, y)
    for model in (theirs, ours):
        with pytest.raises(ValueError, match=message):
            model.latent_mean_and_variance(X)


# ------------------------------------------------- item 7: a GPC-signature user optimizer
def _list_optimizer(obj_func, initial_theta, bounds):
    """A gradient-free user optimizer that hands obj_func plain lists (a coordinate search);
    scikit-learn's GPC runs it."""
    theta = [float(t) for t in initial_theta]
    value = obj_func(theta, eval_gradient=False)
    for _ in range(3):
        for i in range(len(theta)):
            for step in (-0.5, 0.5):
                trial = list(theta)
                trial[i] = min(max(trial[i] + step, bounds[i][0]), bounds[i][1])
                trial_value = obj_func(trial, eval_gradient=False)
                if trial_value < value:
                    theta, value = trial, trial_value
    return theta, value


@pytest.mark.parametrize("kernel", [None, C(1.0) * RBF(1.0)], ids=["default", "user"])
def test_classifier_takes_a_gpc_signature_optimizer(kernel):
    X, y = _moons()
    for reference in (None, C(1.0) * RBF(1.0)):  # scikit-learn's GPC runs it
        GaussianProcessClassifier(reference, optimizer=_list_optimizer).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        model = SparseGPClassifier(kernel, max_basis=40, optimizer=_list_optimizer, max_iter=2)
        model.fit(X, y)
    assert model.score(X, y) > 0.8


def _ring(n, d, seed):
    """Ringnorm-like data: class +1 a broad Gaussian around the tight class -1."""
    rng = np.random.RandomState(seed)
    y = np.where(rng.rand(n) < 0.5, 1, -1)
    X = np.where(y[:, None] > 0, 2.0 * rng.randn(n, d), rng.randn(n, d) + 2.0 / np.sqrt(d))
    return X, y


def test_restarts_never_end_at_a_lower_evidence_than_no_restart():
    # scikit-learn's rule for n_restarts_optimizer: the optimum of highest evidence is kept,
    # and the first run is the plain fit (on main, restarts chosen on held-out rows ended
    # 1e-5 nats lower here)
    X, y = _ring(60, 3, 0)
    plain = SparseGPClassifier(max_basis=60, random_state=0).fit(X, y)
    restarted = SparseGPClassifier(max_basis=60, n_restarts=1, random_state=0).fit(X, y)
    assert restarted.log_marginal_likelihood_value_ >= plain.log_marginal_likelihood_value_
    losses = restarted._binary.restart_losses_
    assert losses[0] * len(y) == pytest.approx(-plain.log_marginal_likelihood_value_, rel=1e-12)
    assert -restarted.log_marginal_likelihood_value_ / len(y) == pytest.approx(losses.min())


def _free_gradient(model):
    """|d log evidence / d theta| at the fitted theta, zero where theta sits at a bound
    and the gradient points out of the box (a converged bound-constrained optimum)."""
    theta, bounds = model.kernel_.theta, model.kernel_.bounds
    _, grad = model.log_marginal_likelihood(theta, eval_gradient=True)
    at_lower = np.isclose(theta, bounds[:, 0]) & (grad < 0)
    at_upper = np.isclose(theta, bounds[:, 1]) & (grad > 0)
    return np.abs(np.where(at_lower | at_upper, 0.0, grad))


def test_fit_ends_where_the_evidence_gradient_vanishes_as_scikit_learn():
    # (on main the fit stopped with the gradient 4e-3 off zero here)
    X, y = make_moons(n_samples=60, noise=0.3, random_state=1)
    kernel = C(1.0, (1e-3, 1e3)) * RBF(1.0, (1e-2, 1e2))
    theirs = GaussianProcessClassifier(kernel).fit(X, y)
    ours = SparseGPClassifier(kernel, max_basis=60).fit(X, y)  # every row in the basis
    assert np.all(_free_gradient(theirs) < 1e-3)  # scikit-learn's L-BFGS-B: gtol 1e-5
    assert np.all(_free_gradient(ours) < 1e-3), _free_gradient(ours)
