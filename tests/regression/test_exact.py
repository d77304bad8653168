"""The full-basis objectives of the subset start (skgpsparse.regression._exact)."""

import numpy as np
import pytest
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, Matern, WhiteKernel
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse.regression._exact import FULL_BASIS_OBJECTIVES
from skgpsparse.regression._vfe import OBJECTIVES

KERNELS = [
    C(1.3) * RBF([0.8, 1.5, 2.0]),
    Matern(1.0, nu=2.5) + C(0.1),
    C(1.0) * RBF(1.0) + WhiteKernel(0.05),
]


def _data(n=60, targets=1):
    rng = np.random.RandomState(0)
    X = rng.randn(n, 3)
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(n)
    return X, (y if targets == 1 else np.column_stack([y, np.cos(X[:, 1])]))


@pytest.mark.parametrize("objective", ["dtc", "vfe"])
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("targets", [1, 2])
def test_equals_the_sparse_objective_with_every_row_in_the_basis(objective, kernel, targets):
    X, y = _data(targets=targets)
    value, grad = FULL_BASIS_OBJECTIVES[objective](kernel, X, y, X, 0.05, eval_gradient=True)
    # the sparse objective on the same basis, its jitter far below the noise
    ref, ref_grad = OBJECTIVES[objective](kernel, X, y, X, 0.05, eval_gradient=True,
                                          jitter=1e-10)
    assert value == pytest.approx(ref, abs=1e-6)
    np.testing.assert_allclose(grad, ref_grad, atol=1e-6)
    again = FULL_BASIS_OBJECTIVES[objective](kernel, X, y, X, 0.05)
    assert again == pytest.approx(value, rel=1e-12)


@pytest.mark.parametrize("objective", ["dtc", "vfe"])
def test_gradient_matches_central_differences(objective):
    X, y = _data()
    kernel = C(1.3) * RBF([0.8, 1.5, 2.0]) + WhiteKernel(0.02)
    f = FULL_BASIS_OBJECTIVES[objective]
    theta = np.append(kernel.theta, np.log(0.05))
    _, grad = f(kernel, X, y, X, 0.05, eval_gradient=True)
    h = 1e-6
    for i in range(len(theta)):
        up, down = theta.copy(), theta.copy()
        up[i] += h
        down[i] -= h
        fd = (f(kernel.clone_with_theta(up[:-1]), X, y, X, np.exp(up[-1]))
              - f(kernel.clone_with_theta(down[:-1]), X, y, X, np.exp(down[-1]))) / (2 * h)
        assert grad[i] == pytest.approx(fd, rel=1e-5, abs=1e-6)


def test_dtc_form_is_scikit_learns_log_marginal_likelihood():
    X, y = _data()
    kernel = C(1.3) * RBF([0.8, 1.5, 2.0])
    gpr = GaussianProcessRegressor(kernel, alpha=0.05, optimizer=None).fit(X, y)
    ref, ref_grad = gpr.log_marginal_likelihood(kernel.theta, eval_gradient=True)
    value, grad = FULL_BASIS_OBJECTIVES["dtc"](kernel, X, y, X, 0.05, eval_gradient=True)
    assert value == pytest.approx(ref, rel=1e-12)
    np.testing.assert_allclose(grad[:-1], ref_grad, rtol=1e-10)
