"""The hyperprior on per-feature length scales (classification/_hyperprior.py) and its effect.

A user's ARD kernel fitted by the EP evidence alone on 150 rows and 12 equally relevant
features is overconfident; with the log-normal prior around the mean log length scale the
test NLP is at or below scikit-learn's full (Laplace) GPC with the same kernel.
"""

import warnings

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessClassifier
from sklearn.gaussian_process.kernels import RBF, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C
from sklearn.metrics import log_loss

from skgpsparse import SparseGPClassifier
from skgpsparse.kernels._scales import per_feature_length_scale_positions as ard_positions
from skgpsparse.latent.objectives import _hyperprior
from skgpsparse.latent.objectives._hyperprior import with_length_scale_prior


def _flat(theta, eval_gradient=True):
    return (0.0, np.zeros(theta.shape)) if eval_gradient else 0.0


def test_positions_of_the_free_per_feature_length_scales():
    kernel = C(1.0, "fixed") * RBF([1.0, 2.0, 3.0]) + WhiteKernel(0.1)
    assert [list(p) for p in ard_positions(kernel)] == [[0, 1, 2]]
    assert [list(p) for p in ard_positions(C(1.0) * RBF([1.0, 2.0]))] == [[1, 2]]
    assert ard_positions(C(1.0) * RBF(1.0)) == []
    # one length scale: the objective is returned as it is
    assert with_length_scale_prior(_flat, C(1.0) * RBF(1.0), 10) is _flat


def test_the_prior_term_and_its_gradient():
    kernel = C(1.0) * RBF([1.0, 2.0, 3.0])
    n, sigma = 50, 0.7
    target = with_length_scale_prior(_flat, kernel, n, sigma=sigma)
    theta = np.array([0.3, -0.2, 0.5, 1.4, 0.1])  # log amplitude, 3 log length scales, b
    logs = theta[1:4]
    expected = np.sum((logs - logs.mean()) ** 2) / (2 * sigma**2 * n)
    value, grad = target(theta)
    assert value == pytest.approx(expected, rel=1e-14)
    assert target(theta, eval_gradient=False) == pytest.approx(expected, rel=1e-14)
    step = 1e-6
    fd = [(target(theta + step * e, False) - target(theta - step * e, False)) / (2 * step)
          for e in np.eye(theta.size)]
    np.testing.assert_allclose(grad, fd, rtol=1e-7, atol=1e-12)
    assert grad[0] == 0.0 and grad[-1] == 0.0  # the amplitude and the bias are not shrunk
    # equal length scales cost nothing
    assert target(np.array([0.3, 0.4, 0.4, 0.4, 0.1]), False) == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_users_ard_kernel_on_few_rows_is_no_more_confident_than_the_full_gp(seed, monkeypatch):
    rng = np.random.RandomState(seed)
    X = rng.randn(1150, 12)
    y = (X.sum(axis=1) / np.sqrt(12) + 0.7 * rng.randn(1150) > 0).astype(int)
    X, y, X_test, y_test = X[:150], y[:150], X[150:], y[150:]
    kernel = C(1.0) * RBF(np.ones(12))

    def fit():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model = SparseGPClassifier(kernel, max_basis=30, random_state=0).fit(X, y)
        return log_loss(y_test, model.predict_proba(X_test))

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        full = GaussianProcessClassifier(kernel, random_state=0).fit(X, y)
    nlp_full = log_loss(y_test, full.predict_proba(X_test))
    assert fit() <= nlp_full
    # the evidence alone (a prior too wide to matter) is more confident than the data support
    monkeypatch.setattr(_hyperprior, "SIGMA", 1e6)
    assert fit() > nlp_full
