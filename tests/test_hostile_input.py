"""Bad input gets a clear error; awkward input gets finite, well-formed predictions."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgpsparse import SparseGPClassifier, SparseGPRegressor

CLASSIFIER_SELECTIONS = ["random", "entropy", "info_gain", "nlp", "adaptive"]
REGRESSOR_SELECTIONS = ["random", "exact", "matching_pursuit", "info_gain"]


def _classifier(**params):
    return SparseGPClassifier(**{"max_basis": 10, "max_iter": 2, "random_state": 0, **params})


def _regressor(**params):
    return SparseGPRegressor(**{"max_basis": 10, "max_iter": 2, "random_state": 0, **params})


def _data(n=40, d=3, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] + 0.3 * rng.normal(size=n) > 0).astype(int)


def _assert_well_formed(est, X):
    """Finite predictions; probabilities in [0, 1] summing to 1; non-negative finite stds."""
    if hasattr(est, "predict_proba"):
        proba = est.predict_proba(X)
        assert np.all(np.isfinite(proba))
        assert np.all((proba >= 0) & (proba <= 1))
        np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
        assert np.all(np.isfinite(est.decision_function(X)))
        assert set(est.predict(X)) <= set(est.classes_)
    else:
        mean, std = est.predict(X, return_std=True)
        assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std)) and np.all(std >= 0)


MAKERS = [_classifier, _regressor]


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_X_is_rejected(make, bad):
    X, y = _data()
    X[3, 1] = bad
    with pytest.raises(ValueError, match="(NaN|infinity)"):
        make().fit(X, y)
    X_ok, y = _data()
    est = make().fit(X_ok, y)
    with pytest.raises(ValueError, match="(NaN|infinity)"):
        est.predict(X)


@pytest.mark.parametrize("make", MAKERS)
def test_non_finite_y_is_rejected(make):
    X, y = _data()
    y = y.astype(float)
    y[0] = np.nan
    with pytest.raises(ValueError):
        make().fit(X, y)


@pytest.mark.parametrize("make", MAKERS)
def test_empty_wrong_dimension_and_mismatched_lengths(make):
    X, y = _data()
    with pytest.raises(ValueError, match="0 sample"):
        make().fit(X[:0], y[:0])
    with pytest.raises(ValueError, match="2D array"):
        make().fit(X[:, 0], y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        make().fit(X, y[:-1])
    est = make().fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :2])
    with pytest.raises(ValueError, match="2D array"):
        est.predict(X[0])


@pytest.mark.parametrize("make", MAKERS)
def test_sparse_matrix_is_rejected_with_advice(make):
    X, y = _data()
    with pytest.raises(TypeError, match="[Ss]parse"):
        make().fit(sp.csr_matrix(X), y)


def test_one_class_is_rejected():
    X, _ = _data()
    with pytest.raises(ValueError, match="class"):
        _classifier().fit(X, np.ones(len(X)))


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize(
    "param, value",
    [("max_basis", 0), ("max_basis", -3), ("max_basis", 2.5), ("selection", "nonsense"),
     ("max_iter", -1), ("working_set_size", 0), ("n_exchange", -1)],
)
def test_bad_parameters_name_the_parameter(make, param, value):
    X, y = _data()
    with pytest.raises((ValueError, TypeError), match=param):
        make(**{param: value}).fit(X, y)


@pytest.mark.parametrize("make", MAKERS)
def test_max_basis_larger_than_n_is_clipped_with_a_warning(make):
    X, y = _data(n=12)
    with pytest.warns(UserWarning, match="max_basis"):
        est = make(max_basis=50, optimizer=None).fit(X, y)
    basis = est.estimators_[0].basis_indices_ if hasattr(est, "estimators_") else None
    basis = est.basis_indices_ if basis is None else basis
    assert len(basis) <= 12
    _assert_well_formed(est, X)


@pytest.mark.parametrize("make", MAKERS)
def test_duplicated_rows_never_give_a_singular_factor(make):
    X, y = _data(n=20)
    X, y = np.vstack([X, X, X]), np.concatenate([y, y, y])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a warning that the basis stopped growing is fine
        est = make(max_basis=40).fit(X, y)
    _assert_well_formed(est, X)


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize("scale", [1e6, 1e-6])
def test_extreme_feature_scales(make, scale):
    X, y = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = make().fit(X * scale, y)
    _assert_well_formed(est, X * scale)


@pytest.mark.parametrize("make", MAKERS)
def test_constant_features_and_float32(make):
    X, y = _data()
    X = np.hstack([X, np.full((len(X), 2), 5.0)]).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = make().fit(X, y)
    _assert_well_formed(est, X)
    _assert_well_formed(est, X[:1])  # a single test row


@pytest.mark.parametrize("labels", [np.array(["no", "yes"]), np.array([-7, 12]),
                                    np.array(["a", "b", "c"])])
def test_string_and_integer_labels(labels):
    X, y = _data(n=60)
    y = labels[(np.arange(60) * len(labels)) // 60]
    est = _classifier().fit(X, y)
    np.testing.assert_array_equal(est.classes_, np.sort(labels))
    assert set(est.predict(X)) <= set(labels)
    _assert_well_formed(est, X)


@pytest.mark.parametrize("make", MAKERS)
@pytest.mark.parametrize("length_scale", [1e-5, 1e5])
def test_extreme_kernel_hyperparameters_from_the_user(make, length_scale):
    X, y = _data()
    kernel = ConstantKernel(1.0, "fixed") * RBF(length_scale, "fixed")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = make(kernel=kernel, optimizer=None).fit(X, y)
    _assert_well_formed(est, X)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(4, 40), d=st.integers(1, 4), seed=st.integers(0, 10_000),
    max_basis=st.integers(1, 15), n_classes=st.integers(2, 3),
    duplicate=st.booleans(), scale=st.sampled_from([1e-3, 1.0, 1e3]),
    classifier_selection=st.sampled_from(CLASSIFIER_SELECTIONS),
    regressor_selection=st.sampled_from(REGRESSOR_SELECTIONS),
    n_exchange=st.integers(0, 3),
)
def test_random_small_problems_give_well_formed_predictions(
    n, d, seed, max_basis, n_classes, duplicate, scale, classifier_selection,
    regressor_selection, n_exchange,
):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, d)) * scale
    if duplicate:
        X[n // 2:] = X[: n - n // 2]
    y = np.arange(n) % n_classes
    rng.shuffle(y)
    X_test = rng.normal(size=(5, d)) * scale
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = _classifier(max_basis=max_basis, selection=classifier_selection,
                          random_state=seed).fit(X, y)
        reg = _regressor(max_basis=max_basis, selection=regressor_selection,
                         n_exchange=n_exchange, random_state=seed).fit(X, y * 1.5 + 0.1)
    for est in (clf, reg):
        _assert_well_formed(est, X_test)


def test_classifier_warns_when_a_learned_hyperparameter_ends_at_a_bound():
    X, y = _data(n=60)
    # An amplitude bounded to a narrow, too-small range: the NLP step pushes it to the upper
    # bound, and the user is told so (scikit-learn's ConvergenceWarning from the kernel).
    kernel = ConstantKernel(1e-3, (1e-4, 1e-3)) * RBF(1.0)
    with pytest.warns(ConvergenceWarning, match="k1__constant_value"):
        _classifier(kernel=kernel, max_iter=2).fit(X, y)
