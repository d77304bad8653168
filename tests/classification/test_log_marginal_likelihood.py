"""SparseGPClassifier.log_marginal_likelihood: the EP evidence of the basis labels."""

import numpy as np
import pytest
from scipy import integrate
from scipy.stats import multivariate_normal, norm
from sklearn.datasets import make_blobs, make_moons
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse import SparseGPClassifier


def _binary(n=60, seed=0):
    X, y = make_moons(n_samples=n, noise=0.25, random_state=seed)
    return X, y


def test_one_basis_vector_gives_the_exact_evidence():
    # with one basis latent f ~ N(0, k), P(y | b) = Phi(y b / sqrt(1 + k)): EP is exact there
    X, y = _binary()
    kernel = C(1.7) * RBF(0.8)
    model = SparseGPClassifier(
        kernel, posterior="basis", max_basis=1, optimizer=None, random_state=0
    ).fit(X, y)
    j = model.basis_indices_[0]
    label = 1.0 if y[j] == model.classes_[1] else -1.0
    k = kernel.diag(X[[j]])[0]
    expected = norm.logcdf(label * model.bias_ / np.sqrt(1.0 + k))
    np.testing.assert_allclose(model.log_marginal_likelihood_value_, expected, rtol=1e-10)
    np.testing.assert_allclose(model.log_marginal_likelihood(model.kernel_.theta), expected,
                               rtol=1e-10)


def test_two_basis_vectors_close_to_the_integrated_evidence():
    # two latents: the exact evidence is a 2-D integral; EP approximates it closely
    X, y = _binary()
    kernel = C(1.0) * RBF(1.0)
    model = SparseGPClassifier(
        kernel, posterior="basis", max_basis=2, optimizer=None, random_state=3
    ).fit(X, y)
    Xu = model.basis_vectors_
    t = np.where(y[model.basis_indices_] == model.classes_[1], 1.0, -1.0)
    K = kernel(Xu)
    b = model.bias_
    prior = multivariate_normal(np.zeros(2), K)

    def integrand(f2, f1):
        return prior.pdf([f1, f2]) * norm.cdf(t[0] * (f1 + b)) * norm.cdf(t[1] * (f2 + b))

    s = 8 * np.sqrt(np.max(np.diag(K)))
    exact, _ = integrate.dblquad(integrand, -s, s, -s, s, epsabs=1e-10)
    np.testing.assert_allclose(model.log_marginal_likelihood_value_, np.log(exact), atol=5e-3)


def test_gradient_matches_finite_differences():
    X, y = _binary()
    model = SparseGPClassifier(C(1.0) * RBF([1.0, 1.0]), max_basis=12, max_iter=2,
                               random_state=0).fit(X, y)
    theta = model.kernel_.theta + 0.2
    value, grad = model.log_marginal_likelihood(theta, eval_gradient=True)
    np.testing.assert_allclose(value, model.log_marginal_likelihood(theta), rtol=1e-10)
    assert grad.shape == theta.shape
    for i in range(theta.size):
        e = np.zeros_like(theta)
        e[i] = 1e-5
        fd = (model.log_marginal_likelihood(theta + e)
              - model.log_marginal_likelihood(theta - e)) / 2e-5
        # EP stops when no site moves by more than its tolerance, and the gradient is the one
        # at the fixed point: up to ~1e-4 of the gradient's norm off the value's slope (norm
        # ~4 here, the fit at its converged optimum; 2.5e-4 off in the flat amplitude entry)
        np.testing.assert_allclose(grad[i], fd, rtol=1e-3, atol=1e-4 * np.linalg.norm(grad))
    with pytest.raises(ValueError, match="theta"):
        model.log_marginal_likelihood(np.zeros(theta.size + 1))
    with pytest.raises(ValueError, match="theta!=None"):
        model.log_marginal_likelihood(eval_gradient=True)


def test_evidence_ranks_kernels_as_scikit_learns_full_gpc():
    # every row but one in the basis: the EP evidence of the probit model and scikit-learn's
    # Laplace evidence of its logistic model are different approximations of different
    # likelihoods, so their values differ; what a user compares kernels by, the ranking, holds
    X, y = _binary(n=50)
    y = np.r_[y[:24], y[25:]]  # balanced: the bias start b = 0, as the unbiased GPC
    X = np.r_[X[:24], X[25:]]
    ours, theirs = [], []
    for length_scale in (0.03, 0.1, 0.7, 5.0, 30.0):
        kernel = C(4.0) * RBF(length_scale)
        sparse = SparseGPClassifier(kernel, max_basis=48, optimizer=None).fit(X, y)
        rows = sparse.basis_indices_
        full = GaussianProcessClassifier(kernel, optimizer=None).fit(X[rows], y[rows])
        ours.append(sparse.log_marginal_likelihood_value_)
        theirs.append(full.log_marginal_likelihood_value_)
    assert np.argmax(ours) == np.argmax(theirs)
    assert np.corrcoef(np.argsort(np.argsort(ours)), np.argsort(np.argsort(theirs)))[0, 1] > 0.8


def test_multiclass_follows_scikit_learns_one_vs_rest_conventions():
    X, y = make_blobs(n_samples=90, centers=3, cluster_std=2.0, random_state=1)
    model = SparseGPClassifier(max_basis=10, max_iter=2, random_state=0).fit(X, y)
    values = [est.log_marginal_likelihood_value_ for est in model.estimators_]
    np.testing.assert_allclose(model.log_marginal_likelihood_value_, np.mean(values))
    np.testing.assert_allclose(model.log_marginal_likelihood(), np.mean(values))
    theta = model.estimators_[0].kernel_.theta
    stacked = np.tile(theta, 3)
    np.testing.assert_allclose(model.log_marginal_likelihood(theta),
                               model.log_marginal_likelihood(stacked), rtol=1e-12)
    fitted = np.concatenate([est.kernel_.theta for est in model.estimators_])
    np.testing.assert_allclose(model.log_marginal_likelihood(fitted), np.mean(values),
                               rtol=1e-8)
    with pytest.raises(NotImplementedError, match="multi-class"):
        model.log_marginal_likelihood(theta, eval_gradient=True)
    with pytest.raises(ValueError, match="theta"):
        model.log_marginal_likelihood(np.zeros(theta.size + 1))
