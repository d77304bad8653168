"""Predictions on one row (or a few): the cheap input check and the kernel set up at fit.

A finite float ``ndarray`` skips ``validate_data`` (``skgpsparse._validation``) and the
kernel against the basis is set up once at the end of the fit (``CrossKernel``). Predictions
must equal those of the general path (``validate_data``; blocks of many rows) to round-off,
and every other input must meet scikit-learn's validation, errors and warnings included.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.gaussian_process.kernels import RBF, Matern
from sklearn.gaussian_process.kernels import ConstantKernel as C

import skgpsparse.kernels._columns as columns
import skgpsparse.kernels._structured as structured
import skgpsparse.regression._predict as reg_module
from skgpsparse import SparseGPClassifier, SparseGPRegressor

D = 4
SMALL_ROWS = 64  # the rows of the tests' batches: 2 * SMALL_ROWS + 1


def _classification(n=150, n_classes=2, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, D))
    score = X[:, 0] + 0.5 * X[:, 1] ** 2 + 0.3 * rng.normal(size=n)
    y = np.digitize(score, np.quantile(score, np.linspace(0, 1, n_classes + 1)[1:-1]))
    return X, y


def _regression(n=150, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.normal(size=(n, D))
    return X, np.sin(X[:, 0]) + 0.5 * X[:, 1] + 0.1 * rng.normal(size=n)


CLASSIFIERS = {
    "default C*RBF, learned": {},
    "ARD RBF, learned": {"kernel": RBF(np.ones(D))},
    "ARD RBF, learned, basis posterior": {"kernel": RBF(np.ones(D)), "posterior": "basis"},
    "RBF*C, fixed": {"kernel": RBF(1.5) * C(2.0), "optimizer": None},
    "Matern, fixed": {"kernel": C(1.5) * Matern(1.2, nu=1.5), "optimizer": None},
    "multiclass": {"n_classes": 3},
}
REGRESSORS = {
    "default C*RBF, learned": {},
    "ARD C*RBF, normalize_y": {"kernel": C(1.0) * RBF(np.ones(D)), "normalize_y": True},
    "Matern, fixed": {"kernel": C(1.0) * Matern(1.0, nu=2.5), "optimizer": None},
}


def _fit_classifier(params, X=None):
    params = dict(params)
    data_X, y = _classification(n_classes=params.pop("n_classes", 2))
    model = SparseGPClassifier(max_basis=20, max_iter=2, random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(data_X if X is None else X, y)


def _fit_regressor(params, X=None):
    data_X, y = _regression()
    model = SparseGPRegressor(max_basis=20, max_iter=2, random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(data_X if X is None else X, y)


@pytest.fixture(scope="module", params=list(CLASSIFIERS))
def classifier(request):
    return _fit_classifier(CLASSIFIERS[request.param])


@pytest.fixture(scope="module", params=list(REGRESSORS))
def regressor(request):
    return _fit_regressor(REGRESSORS[request.param])


def _test_rows(n=2 * SMALL_ROWS + 1, seed=1):
    # Rows at the training data's scale and every 7th far out: a spread of variances.
    X = np.random.RandomState(seed).normal(size=(n, D))
    X[::7] *= 4.0
    return X


def _classifier_outputs(model, X):
    outputs = {
        "predict_proba": model.predict_proba(X),
        "predict_log_proba": model.predict_log_proba(X),
        "decision_function": model.decision_function(X),
    }
    if model.classes_.size == 2:  # as scikit-learn's GPC: the latent of binary models only
        outputs["latent_mean"], outputs["latent_var"] = model.latent_mean_and_variance(X)
    return outputs


def _regressor_outputs(model, X):
    mean, std = model.predict(X, return_std=True)
    return {"predict": model.predict(X), "mean": mean, "std": std}


def _row_by_row(outputs, X, to_rows=lambda X, i: X[i : i + 1]):
    rows = [outputs(to_rows(X, i)) for i in range(len(X))]
    return {key: np.concatenate([r[key] for r in rows]) for key in rows[0]}


def _assert_outputs_close(got, expected, rtol=1e-12):
    # Round-off relative to each value, or to the output's scale where a value is a sum of
    # cancelling terms (a margin f + b near 0, a variance near 0 on a basis point): a block of
    # many rows and a single row are different BLAS calls, whose sums can round differently.
    for key in expected:
        atol = rtol * np.max(np.abs(expected[key]))
        np.testing.assert_allclose(got[key], expected[key], rtol=rtol, atol=atol, err_msg=key)


# ------------------------------------------------------------- single rows against the batch
def test_classifier_single_rows_equal_the_general_path(classifier):
    X = _test_rows()
    batch = _classifier_outputs(classifier, X)  # one block of many rows
    single = _row_by_row(lambda x: _classifier_outputs(classifier, x), X)
    _assert_outputs_close(single, batch)
    np.testing.assert_array_equal(
        np.concatenate([classifier.predict(X[i : i + 1]) for i in range(len(X))]),
        classifier.predict(X),
    )


def test_regressor_single_rows_equal_the_general_path(regressor):
    X = _test_rows()
    batch = _regressor_outputs(regressor, X)
    single = _row_by_row(lambda x: _regressor_outputs(regressor, x), X)
    _assert_outputs_close(single, batch)
    # the covariance of one row is its variance, as the batch's std gives it
    cov = np.concatenate([regressor.predict(X[i : i + 1], return_cov=True)[1][0] for i in
                          range(len(X))])
    np.testing.assert_allclose(np.sqrt(cov), batch["std"], rtol=1e-10)


def test_the_same_small_input_through_validate_data_gives_the_same_bits(classifier):
    # A list of lists is not an ndarray: it goes through validate_data, blocks of the same
    # shape follow, so the two routes must agree to the bit.
    X = _test_rows(n=SMALL_ROWS)
    for i in (0, 7, 60):
        fast = classifier.predict_proba(X[i : i + 3])
        general = classifier.predict_proba(X[i : i + 3].tolist())
        np.testing.assert_array_equal(fast, general)


def test_regressor_same_bits_through_validate_data(regressor):
    X = _test_rows(n=10)
    np.testing.assert_array_equal(regressor.predict(X[:2]), regressor.predict(X[:2].tolist()))
    for kw in ({"return_std": True}, {"return_cov": True}):
        fast = regressor.predict(X[:2], **kw)
        general = regressor.predict(X[:2].tolist(), **kw)
        np.testing.assert_array_equal(fast[0], general[0])
        np.testing.assert_array_equal(fast[1], general[1])


@pytest.mark.parametrize("make", [_fit_classifier, _fit_regressor])
def test_float32_rows_equal_their_float64_cast(make):
    model = make({})
    X32 = _test_rows().astype(np.float32)
    X64 = X32.astype(np.float64)
    outputs = _classifier_outputs if isinstance(model, SparseGPClassifier) else _regressor_outputs
    single32 = _row_by_row(lambda x: outputs(model, x), X32)
    _assert_outputs_close(single32, outputs(model, X32))  # the batch: validate_data's cast
    _assert_outputs_close(single32, outputs(model, X64))


@pytest.mark.parametrize("make", [_fit_classifier, _fit_regressor])
def test_dataframe_rows_with_feature_names(make):
    X, _ = _classification()
    names = [f"f{j}" for j in range(D)]
    model = make({}, X=pd.DataFrame(X, columns=names))
    outputs = _classifier_outputs if isinstance(model, SparseGPClassifier) else _regressor_outputs
    X_test = pd.DataFrame(_test_rows(), columns=names)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # named rows for a model fitted with names: no warning
        single = _row_by_row(lambda x: outputs(model, x), X_test, lambda X, i: X.iloc[i : i + 1])
    _assert_outputs_close(single, outputs(model, X_test))
    # a plain array for a model fitted with names: scikit-learn's warning, as for many rows
    with pytest.warns(UserWarning, match="does not have valid feature names"):
        plain = outputs(model, X_test.to_numpy()[:1])
    _assert_outputs_close(plain, {k: v[:1] for k, v in single.items()})
    # reordered columns: scikit-learn's error
    with pytest.raises(ValueError, match="feature names"):
        outputs(model, X_test.iloc[:1, ::-1])


# ------------------------------------------------------------------ an independent formula
def test_single_row_classifier_equals_dense_eq_2_7():
    model = _fit_classifier(CLASSIFIERS["ARD RBF, learned, basis posterior"])
    X = _test_rows(n=20)
    Z, s = model.basis_vectors_, np.sqrt(model.site_precision_)
    B = np.eye(len(s)) + s[:, None] * model.kernel_(Z) * s[None, :]
    for x in X:
        k = model.kernel_(x[None, :], Z)[0]
        # validation paper eq. (2.7): f = k^T S B^-1 S m, s2 = k** - k^T S B^-1 S k
        f = k @ (s * np.linalg.solve(B, s * model.site_mean_)) + model.bias_
        s2 = model.kernel_.diag(x[None, :])[0] - (s * k) @ np.linalg.solve(B, s * k)
        margin = model.decision_function(x[None, :])[0]
        np.testing.assert_allclose(margin, f / np.sqrt(1.0 + max(s2, 0.0)), rtol=1e-9)


def test_single_row_regressor_equals_dense_eq_8_27():
    model = _fit_regressor(REGRESSORS["ARD C*RBF, normalize_y"])
    X_train, _ = _regression()
    Z, s2 = model.basis_vectors_, model.noise_variance_
    # the predictions take the jitter only where strictly needed (regression/_prediction.py):
    # the jitter-free formulas on this well-conditioned basis
    K_uu = model.kernel_(Z)
    K_uf = model.kernel_(Z, X_train)
    scale = model._y_train_std
    for x in _test_rows(n=20):
        k = model.kernel_(Z, x[None, :])[:, 0]
        # GPML eq. (8.27): k** - k^T K_uu^-1 k + s2 k^T (s2 K_uu + K_uf K_fu)^-1 k
        var = (
            model.kernel_.diag(x[None, :])[0]
            - k @ np.linalg.solve(K_uu, k)
            + s2 * k @ np.linalg.solve(s2 * K_uu + K_uf @ K_uf.T, k)
        )
        mean, std = model.predict(x[None, :], return_std=True)
        np.testing.assert_allclose(mean[0], k @ model.alpha_ + model._y_train_mean, rtol=1e-9)
        np.testing.assert_allclose(std[0], np.sqrt(max(var, 0.0)) * scale, rtol=1e-6)


# ---------------------------------------------------------------- which inputs take the path
def _count_validate_data(monkeypatch, module):
    calls = []
    real = module.validate_data

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "validate_data", counting)
    return calls


# where each estimator's prediction calls validate_data (the classifier's through query_rows)
@pytest.mark.parametrize("make, module", [(_fit_classifier, structured),
                                          (_fit_regressor, reg_module)])
def test_only_finite_float_arrays_skip_validate_data(monkeypatch, make, module):
    model = make({})
    X = _test_rows()
    calls = _count_validate_data(monkeypatch, module)
    predict = model.predict_proba if isinstance(model, SparseGPClassifier) else model.predict
    for x in (X[:1], X, X[:1].astype(np.float32), np.asfortranarray(X[:5])):
        predict(x)
    assert calls == []
    for x in (X[:1].tolist(), X[:1].astype(int), X[:1].astype(np.float16),
              pd.DataFrame(X[:1]), X[:1].astype(">f8")):
        before = len(calls)
        predict(x)
        assert len(calls) == before + 1


def test_the_basis_is_not_set_up_again_per_call(monkeypatch):
    # The basis' scaled operand is formed at the end of the fit, not on every prediction.
    model = _fit_classifier({})
    regressor = _fit_regressor({})
    shapes = []
    real = columns._augmented_rows

    def recording(X, centre, length_scale):
        shapes.append(X.shape[0])
        return real(X, centre, length_scale)

    monkeypatch.setattr(columns, "_augmented_rows", recording)
    x = _test_rows(n=3)
    model.predict_proba(x[:1])
    regressor.predict(x, return_std=True)
    assert shapes == [1, 3]  # the query rows only, never the 20 basis vectors


# -------------------------------------------------------------------- bad single rows
@pytest.mark.parametrize("make", [_fit_classifier, _fit_regressor])
@pytest.mark.parametrize(
    "bad, error, match",
    [
        (lambda x: np.where(np.arange(D) == 1, np.nan, x), ValueError, "Input X contains NaN"),
        (lambda x: np.where(np.arange(D) == 2, np.inf, x), ValueError, "infinity"),
        (lambda x: x[:, :3], ValueError, "X has 3 features, but .* is expecting 4 features"),
        (lambda x: x[0], ValueError, "Expected 2D array, got 1D array"),
        (lambda x: x[:0], ValueError, "0 sample"),
        (lambda x: x.astype(complex), ValueError, "Complex data not supported"),
        (lambda x: np.full(x.shape, "a", dtype=object), ValueError, "could not convert"),
        (lambda x: x[None], ValueError, "dim 3"),
        (np.asmatrix, TypeError, "np.matrix is not supported"),
    ],
)
def test_bad_single_rows_get_scikit_learns_errors(make, bad, error, match):
    model = make({})
    x = _test_rows(n=1)
    predict = model.predict_proba if isinstance(model, SparseGPClassifier) else model.predict
    with pytest.raises(error, match=match):
        predict(bad(x))


def test_unfitted_single_row_raises_not_fitted_or_gives_the_prior():
    with pytest.raises(NotFittedError):
        SparseGPClassifier().predict(_test_rows(n=1))
    # the regressor, as scikit-learn's GPR, predicts with its prior before fit
    mean, std = SparseGPRegressor().predict(_test_rows(n=1), return_std=True)
    np.testing.assert_array_equal(mean, [0.0])
    np.testing.assert_allclose(std, [1.0])


@pytest.mark.parametrize("make", [_fit_classifier, _fit_regressor])
def test_single_rows_are_not_written_to(make):
    model = make({})
    x = _test_rows(n=2)
    x.flags.writeable = False  # any write raises
    copy = x.copy()
    model.predict(x)
    if isinstance(model, SparseGPRegressor):
        model.predict(x, return_std=True)
    else:
        model.predict_proba(x)
    np.testing.assert_array_equal(x, copy)
