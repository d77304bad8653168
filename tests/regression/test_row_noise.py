"""Per-row noise (a noise_variance array) and sample weights of SparseGPRegressor (issue 48).

References: scikit-learn's GaussianProcessRegressor(alpha=array) in the full-basis limit, and
the same estimator on the rows repeated by their integer weights (zero weight: removed).
"""

import warnings

import numpy as np
import pytest
import sklearn
from sklearn.base import clone
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.model_selection import GridSearchCV, KFold

from skgpsparse import SparseGPRegressor


def _data(n=25, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, (n, 1))
    a = rng.uniform(0.05, 0.3, n)  # each row's noise variance
    y = np.sin(X[:, 0]) + np.sqrt(a) * rng.randn(n)
    return X, y, a


X_TEST = np.linspace(-3.5, 3.5, 9).reshape(-1, 1)


def _fit(model, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # max_basis clipped to n, bounds
        return clone(model).fit(*args, **kwargs)


@pytest.mark.parametrize("optimizer", [None, "fmin_l_bfgs_b"])
@pytest.mark.parametrize("objective", ["vfe", "dtc"])
def test_noise_array_equals_scikit_learn_alpha_array(optimizer, objective):
    X, y, a = _data()
    kernel = C(1.0) * RBF(1.0)
    theirs = GaussianProcessRegressor(kernel, alpha=a, optimizer=optimizer).fit(X, y)
    ours = _fit(SparseGPRegressor(
        kernel, noise_variance=a, noise_variance_bounds="fixed", max_basis=len(y),
        optimizer=optimizer, hyperparameter_objective=objective, random_state=0,
    ), X, y)
    np.testing.assert_allclose(ours.kernel_.theta, theirs.kernel_.theta, rtol=0, atol=1e-6)
    m1, s1 = theirs.predict(X_TEST, return_std=True)
    m2, s2 = ours.predict(X_TEST, return_std=True)
    np.testing.assert_allclose(m2, m1, rtol=0, atol=1e-8)
    np.testing.assert_allclose(s2, s1, rtol=0, atol=1e-8)
    np.testing.assert_allclose(ours.noise_variance_, a, rtol=1e-15)
    # a full-basis fit reports the exact evidence (scikit-learn's), at its theta and any other
    assert ours.log_marginal_likelihood_value_ == pytest.approx(
        theirs.log_marginal_likelihood_value_, rel=1e-10)
    theta = np.append(theirs.kernel_.theta, 0.0)  # log of the noise's common scale 1
    assert ours.log_marginal_likelihood(theta) == pytest.approx(
        theirs.log_marginal_likelihood(theirs.kernel_.theta), rel=1e-10)


def test_noise_array_learns_a_common_scale():
    X, y, a = _data(seed=1)
    model = _fit(SparseGPRegressor(C(1.0) * RBF(1.0), noise_variance=a, max_basis=len(y),
                                   random_state=0), X, y)
    scale = model.noise_variance_ / a
    np.testing.assert_allclose(scale, scale[0], rtol=1e-12)
    assert scale[0] != 1.0  # learned within noise_variance_bounds


def test_noise_array_errors():
    X, y, a = _data()
    with pytest.raises(ValueError, match="noise_variance"):
        SparseGPRegressor(noise_variance=a[:-1]).fit(X, y)
    with pytest.raises(ValueError, match="noise_variance"):
        SparseGPRegressor(noise_variance=np.r_[a[:-1], 0.0]).fit(X, y)
    model = _fit(SparseGPRegressor(C(1.0) * RBF(1.0), noise_variance=a, optimizer=None,
                                   max_basis=5, random_state=0), X, y)
    with pytest.raises(ValueError, match="noise_variance array"):
        model.partial_fit(X[:3], y[:3])


# Deterministic paths: every candidate scored ("exact" with a working set above n), the
# exact GP start on every row, no leave-one-out calibration and no refinement (random or
# per-row steps, which repeated rows change; see the user guide).
_DETERMINISTIC = {"selection": "exact", "working_set_size": 500, "noise_calibration": None,
                  "refine_basis": 0, "random_state": 0}


# (selection "vfe" with learned hyperparameters: theta, noise and evidence to 1e-8 as well,
# the extrapolated predictions at +-3.5 to 3e-8, where the optimizer's stopping point shows)
@pytest.mark.parametrize("optimizer,objective,selection", [
    (None, "vfe", "exact"), (None, "dtc", "exact"), (None, "vfe", "vfe"),
    ("fmin_l_bfgs_b", "vfe", "exact"), ("fmin_l_bfgs_b", "dtc", "exact"),
])
def test_integer_weights_equal_repeated_rows(optimizer, objective, selection):
    X, y, _ = _data(n=30, seed=2)
    w = np.random.RandomState(3).randint(0, 4, len(y))
    model = SparseGPRegressor(C(1.0) * RBF(1.0), max_basis=10, optimizer=optimizer,
                              hyperparameter_objective=objective, noise_variance=0.05,
                              **_DETERMINISTIC).set_params(selection=selection)
    weighted = _fit(model, X, y, sample_weight=w)
    repeated = _fit(model, np.repeat(X, w, axis=0), np.repeat(y, w))
    np.testing.assert_allclose(weighted.kernel_.theta, repeated.kernel_.theta, rtol=1e-8)
    assert weighted.noise_variance_ == pytest.approx(repeated.noise_variance_, rel=1e-8)
    assert weighted.log_marginal_likelihood_value_ == pytest.approx(
        repeated.log_marginal_likelihood_value_, rel=1e-8)
    m1, s1 = weighted.predict(X_TEST, return_std=True)
    m2, s2 = repeated.predict(X_TEST, return_std=True)
    np.testing.assert_allclose(m1, m2, rtol=0, atol=1e-8)
    np.testing.assert_allclose(s1, s2, rtol=0, atol=1e-8)
    # the same basis rows: the weighted fit's indices are rows of X
    np.testing.assert_array_equal(np.sort(weighted.basis_vectors_[:, 0]),
                                  np.sort(repeated.basis_vectors_[:, 0]))
    assert np.all(w[weighted.basis_indices_] > 0)


def test_zero_weights_equal_removal_and_unit_weights_change_nothing():
    X, y, _ = _data(n=30, seed=4)
    w = np.ones(len(y))
    w[::3] = 0
    model = SparseGPRegressor(C(1.0) * RBF(1.0), max_basis=8, normalize_y=True,
                              **_DETERMINISTIC)
    weighted = _fit(model, X, y, sample_weight=w)
    removed = _fit(model, X[w > 0], y[w > 0])
    np.testing.assert_allclose(weighted.predict(X_TEST), removed.predict(X_TEST),
                               rtol=0, atol=1e-10)
    np.testing.assert_array_equal(weighted.basis_indices_,
                                  np.flatnonzero(w > 0)[removed.basis_indices_])
    plain = SparseGPRegressor(max_basis=8, random_state=0)
    a = _fit(plain, X, y, sample_weight=np.ones(len(y)))
    b = _fit(plain, X, y)
    np.testing.assert_array_equal(a.predict(X_TEST), b.predict(X_TEST))


def test_normalize_y_weights_equal_repeated_rows():
    X, y, _ = _data(n=20, seed=5)
    y = 10.0 + 3.0 * y
    w = np.random.RandomState(6).randint(1, 4, len(y))
    model = SparseGPRegressor(C(1.0) * RBF(1.0), max_basis=6, optimizer=None,
                              normalize_y=True, **_DETERMINISTIC)
    weighted = _fit(model, X, y, sample_weight=w)
    repeated = _fit(model, np.repeat(X, w, axis=0), np.repeat(y, w))
    np.testing.assert_allclose(weighted.predict(X_TEST), repeated.predict(X_TEST),
                               rtol=0, atol=1e-8)


@pytest.mark.parametrize("n_first", [20, 4], ids=["basis-full", "basis-grows"])
def test_partial_fit_weights_equal_repeated_rows(n_first):
    X, y, _ = _data(n=40, seed=7)
    w = np.random.RandomState(8).randint(0, 4, len(y))
    if n_first < 8:
        # unit weights in the first batch: its repeated rows' fit would put a repeated
        # row twice in the basis (the jitter lets it), which the weighted fit cannot
        w[:n_first] = 1
    model = SparseGPRegressor(C(1.0) * RBF(1.0), max_basis=8, optimizer=None,
                              noise_variance=0.05, **_DETERMINISTIC)
    Xr, yr = np.repeat(X, w, axis=0), np.repeat(y, w)
    first = int(np.sum(w[:n_first]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        weighted = clone(model).partial_fit(X[:n_first], y[:n_first],
                                            sample_weight=w[:n_first])
        repeated = clone(model).partial_fit(Xr[:first], yr[:first])
    weighted.partial_fit(X[n_first:], y[n_first:], sample_weight=w[n_first:])
    repeated.partial_fit(Xr[first:], yr[first:])
    assert weighted.basis_vectors_.shape[0] == 8  # grown from the weighted batch
    np.testing.assert_array_equal(np.sort(weighted.basis_vectors_[:, 0]),
                                  np.sort(repeated.basis_vectors_[:, 0]))
    np.testing.assert_allclose(weighted.predict(X_TEST), repeated.predict(X_TEST),
                               rtol=0, atol=1e-8)
    assert weighted.log_marginal_likelihood_value_ == pytest.approx(
        repeated.log_marginal_likelihood_value_, rel=1e-8)


# ----------------------------------------------------------------- metadata routing
def _search(model):
    return GridSearchCV(model, {"noise_variance": [0.05, 0.2]}, cv=KFold(3))


@pytest.mark.parametrize("routing", [False, True])
def test_grid_search_passes_sample_weight_to_the_regressor(routing):
    X, y, _ = _data(n=30, seed=9)
    w = np.where(X[:, 0] > 0, 5.0, 0.0)  # only the right half counts
    model = SparseGPRegressor(C(1.0) * RBF(1.0), max_basis=8, optimizer=None,
                              **_DETERMINISTIC)
    with sklearn.config_context(enable_metadata_routing=routing), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if routing:
            model = model.set_fit_request(sample_weight=True).set_score_request(
                sample_weight=False)
        weighted = _search(model).fit(X, y, sample_weight=w)
        plain = _search(model).fit(X, y)
    best = weighted.best_estimator_
    assert best._row_noise is not None  # the weights reached the refitted estimator
    direct = _fit(best, X, y, sample_weight=w)
    np.testing.assert_allclose(best.predict(X_TEST), direct.predict(X_TEST), atol=1e-12)
    assert np.max(np.abs(best.predict(X_TEST)
                         - plain.best_estimator_.predict(X_TEST))) > 1e-3


def test_warm_start_after_a_noise_array_starts_from_its_scale():
    X, y, a = _data(seed=10)
    model = SparseGPRegressor(C(1.0) * RBF(1.0), noise_variance=a, max_basis=8,
                              warm_start=True, random_state=0)
    first = _fit(model, X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        again = first.fit(X, y)  # warm: from the fitted kernel and the noise's scale
    scale = again.noise_variance_ / a
    np.testing.assert_allclose(scale, scale[0], rtol=1e-12)


def test_partitioned_selection_refuses_weights_and_per_row_noise():
    # the selection on the partitions (fixed hyperparameters) does not take the row scales;
    # the learned fit does (tests/test_row_backend.py, tests/test_dask.py)
    da = pytest.importorskip("dask.array")
    X, y, a = _data(n=60)
    X_d, y_d = da.from_array(X, chunks=(30, 1)), da.from_array(y, chunks=30)
    with pytest.raises(ValueError, match="partitioned array are carried by"):
        SparseGPRegressor(max_basis=5, optimizer=None).fit(X_d, y_d,
                                                           sample_weight=np.full(60, 2.0))
    with pytest.raises(ValueError, match="partitioned array are carried by"):
        SparseGPRegressor(noise_variance=a, max_basis=5, optimizer=None).fit(X_d, y_d)


@pytest.mark.parametrize("optimizer", [None, "fmin_l_bfgs_b"])
def test_repeated_rows_within_the_basis_are_the_weighted_exact_fit(optimizer):
    # 8 distinct rows repeated to 40: with max_basis=10 the basis holds every distinct row,
    # so the fit is the exact GP of the repeated rows (a repeated row is one row of weight k),
    # whatever the order of the rows; a GP on the repeated rows is the reference
    rng = np.random.RandomState(3)
    X = rng.uniform(-3, 3, (8, 2))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(8)
    counts = np.array([1, 3, 5, 2, 7, 4, 6, 12])
    Xr, yr = X.repeat(counts, axis=0), y.repeat(counts)
    model = SparseGPRegressor(C(1.0) * RBF([1.0, 1.0]), max_basis=10, noise_variance=0.05,
                              optimizer=optimizer, random_state=0)
    repeated = _fit(model, Xr, yr)
    order = rng.permutation(8)
    weighted = _fit(model, X[order], y[order], sample_weight=counts[order])
    np.testing.assert_array_equal(repeated.predict(X_TEST2), weighted.predict(X_TEST2))
    assert repeated.noise_variance_ == weighted.noise_variance_
    # every basis row is one of the distinct rows, indexed into the X given
    np.testing.assert_array_equal(np.sort(Xr[repeated.basis_indices_], axis=0),
                                  np.sort(X, axis=0))
    gp = GaussianProcessRegressor(repeated.kernel_, alpha=repeated.noise_variance_,
                                  optimizer=None).fit(Xr, yr)
    mean, std = repeated.predict(X_TEST2, return_std=True)
    want_mean, want_std = gp.predict(X_TEST2, return_std=True)
    np.testing.assert_allclose(mean, want_mean, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(std, want_std, rtol=1e-6, atol=1e-8)


X_TEST2 = np.column_stack([np.linspace(-3, 3, 7), np.linspace(2, -2, 7)])
