"""Drop-in for scikit-learn's GPs on awkward inputs: repeated rows (a singular kernel matrix),
with every row in the basis and scikit-learn's own GaussianProcessRegressor as the reference,
and structured inputs (a kernel over strings, as in scikit-learn's gallery example on
structured data)."""

import warnings

import numpy as np
import pytest
from _support.sequences import _LABELS, _QUERIES, _SEQUENCES, _Y, SequenceKernel
from sklearn.gaussian_process import GaussianProcessClassifier, GaussianProcessRegressor
from sklearn.gaussian_process.kernels import (
    RBF,
    ConstantKernel,
    DotProduct,
)

from skgpsparse import SparseGPClassifier, SparseGPRegressor


def _fixed(kernel, noise, max_basis):
    return SparseGPRegressor(kernel, noise_variance=noise, noise_variance_bounds="fixed",
                             optimizer=None, max_basis=max_basis, random_state=0)


# ---------------------------------------------------------------- singular kernel matrices
def _repeated_rows(seed, repeats=5):
    rng = np.random.RandomState(seed)
    X0 = rng.uniform(-3, 3, size=(12, 1))
    X = np.repeat(X0, repeats, axis=0)
    return X0, X, np.sin(X[:, 0]) + 0.1 * rng.randn(len(X))


def test_low_rank_kernel_on_repeated_rows_predicts_as_the_exact_gp():
    # A linear kernel (rank 2) on 60 rows, each repeated 5 times, noise 1e-10: K + s2 I is
    # singular up to the noise. scikit-learn's GPR predicts; ours raised a LinAlgError from
    # cholesky_append (the factor of V V^T + s2 I lost its pivot to round-off).
    amplitude, s2 = 1e4, 1e-10
    X0, X, y = _repeated_rows(1)
    kernel = ConstantKernel(amplitude, "fixed") * DotProduct(1.0, sigma_0_bounds="fixed")
    X_test = np.linspace(-3, 3, 9)[:, None]
    model = _fixed(kernel, s2, len(X)).fit(X, y)
    mean, std = model.predict(X_test, return_std=True)
    full = GaussianProcessRegressor(kernel, alpha=s2, optimizer=None).fit(X, y)
    mean_sk, std_sk = full.predict(X_test, return_std=True)
    # The exact posterior, independently: Bayesian linear regression on the features
    # phi(x) = sqrt(amplitude) [1, x] (weight space, a well-conditioned 2 x 2 system).
    Phi = np.sqrt(amplitude) * np.column_stack([np.ones(len(X)), X])
    Phi_test = np.sqrt(amplitude) * np.column_stack([np.ones(len(X_test)), X_test])
    A = Phi.T @ Phi + s2 * np.eye(2)
    exact_mean = Phi_test @ np.linalg.solve(A, Phi.T @ y)
    exact_std = np.sqrt(s2 * np.einsum("ij,ji->i", Phi_test, np.linalg.solve(A, Phi_test.T)))
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))
    np.testing.assert_allclose(mean, exact_mean, atol=1e-6)
    # scikit-learn's own answer is off by its round-off (a Cholesky of a matrix whose
    # condition is ~1e16); ours agrees with it to within that.
    sk_error = np.max(np.abs(mean_sk - exact_mean))
    assert np.max(np.abs(mean - mean_sk)) <= sk_error + 1e-6
    # The predictive std is exact up to round-off amplified by the conditioning: well
    # below the prior's std (~300) and of the order of the exact (~1e-5) one.
    assert np.max(np.abs(std - exact_std)) < 1e-4 * np.sqrt(kernel.diag(X_test)).max()
    assert np.max(np.abs(std_sk - exact_std)) < 1e-4


def test_rbf_on_repeated_rows_with_tiny_noise_interpolates_the_duplicates_mean():
    # The same with an RBF kernel of amplitude 1e6 and noise 1e-9: scikit-learn predicts,
    # ours raised. With the noise 1e-15 of the prior variance the exact GP interpolates the
    # mean of each input's repeated targets; ours does up to the effect of its jitter (1e-8
    # of the prior variance, here 1e7 times the noise: the basis' K_uu + jitter I).
    X0, X, y = _repeated_rows(0)
    kernel = ConstantKernel(1e6, "fixed") * RBF(1.0, "fixed")
    model = _fixed(kernel, 1e-9, len(X)).fit(X, y)
    full = GaussianProcessRegressor(kernel, alpha=1e-9, optimizer=None).fit(X, y)
    duplicates_mean = y.reshape(12, 5).mean(axis=1)
    error = np.max(np.abs(model.predict(X0) - duplicates_mean))
    # scikit-learn's Cholesky of K + 1e-9 I (condition ~1e16) rounds its predictions to
    # multiples of 1/64 here: ours is the closer of the two to the exact answer.
    error_sk = np.max(np.abs(full.predict(X0) - duplicates_mean))
    assert error < 1e-2 and error < error_sk
    mean, std = model.predict(np.linspace(-3, 3, 25)[:, None], return_std=True)
    assert np.all(np.isfinite(mean)) and np.all(np.isfinite(std))


@pytest.mark.parametrize("repeats", [1, 3])
def test_repeated_rows_keep_the_exact_gp_where_k_is_positive_definite(repeats):
    # With a noise that keeps K + s2 I well conditioned the held pivot is inactive: the
    # predictions are scikit-learn's to round-off, repeated rows or not.
    X0, X, y = _repeated_rows(2, repeats)
    kernel = ConstantKernel(2.0, "fixed") * RBF(0.8, "fixed")
    X_test = np.linspace(-3.5, 3.5, 15)[:, None]
    mean, std = _fixed(kernel, 1e-2, len(X)).fit(X, y).predict(X_test, return_std=True)
    full = GaussianProcessRegressor(kernel, alpha=1e-2, optimizer=None).fit(X, y)
    mean_sk, std_sk = full.predict(X_test, return_std=True)
    np.testing.assert_allclose(mean, mean_sk, atol=1e-7)
    np.testing.assert_allclose(std, std_sk, atol=1e-7)


# ---------------------------------------------------------------- structured inputs
def _letter_features(sequences, baseline):
    """Features whose inner products are SequenceKernel(baseline): it sums ``baseline`` over
    all pairs of letters and ``1 - baseline`` over the pairs of equal ones, so
    ``k(s, t) = b |s| |t| + (1 - b) sum_c n_c(s) n_c(t)``."""
    return np.array([[np.sqrt(baseline) * len(s)]
                     + [np.sqrt(1.0 - baseline) * s.count(c) for c in "ACGT"]
                     for s in sequences])


def test_regressor_on_strings_predicts_as_scikit_learn():
    # scikit-learn's GPR fits and predicts a list of strings with a kernel whose
    # requires_vector_input is False; ours failed in validation ("could not convert string
    # to float"). With every row in the basis and the same hyperparameters, ours is the same
    # GP: scikit-learn's mean and standard deviation.
    kernel = SequenceKernel(0.3)
    assert not kernel.requires_vector_input
    model = SparseGPRegressor(kernel, noise_variance=1e-2, noise_variance_bounds="fixed",
                              optimizer=None, max_basis=len(_SEQUENCES)).fit(_SEQUENCES, _Y)
    full = GaussianProcessRegressor(kernel, alpha=1e-2, optimizer=None).fit(_SEQUENCES, _Y)
    for query in (_QUERIES, _SEQUENCES):
        mean, std = model.predict(query, return_std=True)
        mean_sk, std_sk = full.predict(query, return_std=True)
        np.testing.assert_allclose(mean, mean_sk, atol=1e-8)
        np.testing.assert_allclose(std, std_sk, atol=1e-8)
    mean, cov = model.predict(_QUERIES, return_cov=True)
    np.testing.assert_allclose(cov, full.predict(_QUERIES, return_cov=True)[1], atol=1e-8)
    # The fitted kernel is the user's (its attributes, its printout), structured inputs set
    # no n_features_in_ (as scikit-learn's), and the constructor's kernel is left alone.
    assert model.kernel_.baseline_similarity == 0.3 and repr(model.kernel_) == repr(kernel)
    assert not hasattr(model, "n_features_in_") and model.kernel is kernel
    # The hyperparameter objective on the full basis is the exact log marginal likelihood.
    theta = np.log([0.6])
    np.testing.assert_allclose(model.log_marginal_likelihood(theta),
                               full.log_marginal_likelihood(theta), rtol=1e-6)


def test_regressor_on_strings_learns_scikit_learns_hyperparameters():
    # Learning the kernel's hyperparameter with the noise fixed: the same optimum as
    # scikit-learn's (the evidence is the exact one on the full basis); refine_basis="auto"
    # does not move the basis (strings have no gradient in the inputs).
    model = SparseGPRegressor(SequenceKernel(), noise_variance=0.05,
                              noise_variance_bounds="fixed", max_basis=len(_SEQUENCES),
                              random_state=0).fit(_SEQUENCES, _Y)
    full = GaussianProcessRegressor(SequenceKernel(), alpha=0.05).fit(_SEQUENCES, _Y)
    np.testing.assert_allclose(model.kernel_.theta, full.kernel_.theta, atol=1e-3)
    np.testing.assert_allclose(model.predict(_QUERIES), full.predict(_QUERIES), atol=1e-3)
    assert model.n_refine_iter_ == 0
    with pytest.raises(ValueError, match="refine_basis > 0 needs the kernel's gradient in its "
                                         "inputs.*got kernel=SequenceKernel"):
        SparseGPRegressor(SequenceKernel(), refine_basis=5).fit(_SEQUENCES, _Y)
    # What needs vector inputs says so by name (scikit-learn's prior before fit, sample_y).
    for call, what in [(lambda: model.sample_y(_QUERIES), "sample_y"),
                       (lambda: SparseGPRegressor(SequenceKernel()).predict(_QUERIES),
                        "predict before fit")]:
        with pytest.raises(ValueError, match=f"SparseGPRegressor: {what} is not available with "
                                             "a kernel on structured inputs"):
            call()


def test_sparse_basis_on_strings_matches_the_same_model_on_feature_vectors():
    # With fewer basis vectors than rows (greedy selection through the kernel's columns on
    # the strings), the model equals the one fitted on vectors whose DotProduct is the same
    # kernel: an independent route to the same computation.
    kernel = SequenceKernel(0.4, "fixed")
    vectors = DotProduct(0.0, sigma_0_bounds="fixed")
    params = dict(noise_variance=0.1, noise_variance_bounds="fixed", max_basis=4, random_state=0)
    on_strings = SparseGPRegressor(kernel, **params).fit(_SEQUENCES, _Y)
    on_vectors = SparseGPRegressor(vectors, **params).fit(_letter_features(_SEQUENCES, 0.4), _Y)
    np.testing.assert_array_equal(on_strings.basis_indices_, on_vectors.basis_indices_)
    np.testing.assert_allclose(on_strings.predict(_QUERIES, return_std=True),
                               on_vectors.predict(_letter_features(_QUERIES, 0.4),
                                                  return_std=True), atol=1e-8)


@pytest.mark.parametrize("labels", [_LABELS, np.array([0, 0, 1, 1, 2, 2, 1, 1, 0, 2, 2, 1])])
def test_classifier_on_strings(labels):
    # scikit-learn's GPC fits the strings too. Its Laplace approximation with the logistic
    # link is not our EP with the probit: the probabilities differ, the classes agree; and
    # our model on the strings is the one on feature vectors with the same kernel (two and
    # three classes, one vs rest).
    kernel = SequenceKernel(0.4, "fixed")
    params = dict(optimizer=None, max_basis=len(_SEQUENCES), random_state=0)
    model = SparseGPClassifier(kernel, **params).fit(_SEQUENCES, labels)
    full = GaussianProcessClassifier(kernel, optimizer=None).fit(_SEQUENCES, labels)
    ours, theirs = model.predict(_SEQUENCES), full.predict(_SEQUENCES)
    # two classes: the same classes; three: scikit-learn's Laplace one-vs-rest misclassifies
    # a training string that ours gets right, the rest agree
    assert np.mean(ours == theirs) >= (1.0 if labels.max() == 1 else 11 / 12)
    assert np.mean(ours == labels) >= np.mean(theirs == labels)
    on_vectors = SparseGPClassifier(DotProduct(0.0, sigma_0_bounds="fixed"), **params).fit(
        _letter_features(_SEQUENCES, 0.4), labels)
    np.testing.assert_allclose(model.predict_proba(_QUERIES),
                               on_vectors.predict_proba(_letter_features(_QUERIES, 0.4)),
                               atol=1e-8)
    assert not hasattr(model, "n_features_in_") and model.kernel is kernel


@pytest.mark.parametrize("estimator", ["regressor", "classifier"])
def test_indefinite_user_kernel_raises_a_clear_error(estimator):
    # ExpSineSquared on three features is not positive definite (scikit-learn's GPs raise a
    # LinAlgError): a ValueError that names the kernel, never a TypeError or a NaN
    from sklearn.gaussian_process.kernels import ExpSineSquared

    rng = np.random.RandomState(0)
    X = rng.uniform(0, 5, (80, 3))
    f = np.sin(2 * X[:, 0])
    if estimator == "regressor":
        model, y = SparseGPRegressor(ExpSineSquared(), max_basis=20, random_state=0), f
    else:
        model, y = SparseGPClassifier(ExpSineSquared(), max_basis=20, random_state=0), f > 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="positive definite"):
            model.fit(X, y)
