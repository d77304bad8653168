"""Gradients of kernel values in the basis inputs (skgpsparse.kernels._inputs)."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import (
    RBF,
    DotProduct,
    ExpSineSquared,
    Matern,
    RationalQuadratic,
    WhiteKernel,
)
from sklearn.gaussian_process.kernels import ConstantKernel as C

from skgpsparse.kernels import _inputs
from skgpsparse.kernels._inputs import input_gradient_contraction, supports_input_gradient

KERNELS = {
    "rbf": RBF(1.3),
    "c-rbf-ard": C(2.0) * RBF([0.5, 1.0, 2.0]),
    "matern05": Matern(1.1, nu=0.5),
    "matern15-ard": Matern([1.0, 2.0, 0.5], nu=1.5),
    "matern25": Matern(0.7, nu=2.5),
    "matern-inf": Matern(1.0, nu=np.inf),
    "rq": RationalQuadratic(1.2, alpha=0.7),
    "c-rbf+white": C(1.5) * RBF(1.0) + WhiteKernel(0.1),
    "power-of-sum": (RBF(1.0) + C(0.3) * Matern(2.0)) ** 2.0,
    "rbf*rq": RBF(1.0) * RationalQuadratic(2.0),
}


def _central_differences(kernel, X, Z, W, h=1e-6):
    fd = np.zeros_like(Z)
    for j in range(Z.shape[0]):
        for k in range(Z.shape[1]):
            Zp, Zm = Z.copy(), Z.copy()
            Zp[j, k] += h
            Zm[j, k] -= h
            fd[j, k] = (np.sum(W * kernel(X, Zp)) - np.sum(W * kernel(X, Zm))) / (2 * h)
    return fd


@pytest.mark.parametrize("name", KERNELS)
def test_contraction_matches_central_differences_of_scikit_learn_kernel(name):
    kernel = KERNELS[name]
    rng = np.random.RandomState(0)
    # away from the origin: the centring must keep the differences accurate
    X, Z, W = rng.randn(120, 3) + 5.0, rng.randn(6, 3) + 5.0, rng.randn(120, 6)
    G = input_gradient_contraction(kernel, X, Z, W)
    fd = _central_differences(kernel, X, Z, W)
    np.testing.assert_allclose(G, fd, rtol=0, atol=1e-6 * np.abs(fd).max())


def test_blocks_do_not_change_the_result(monkeypatch):
    kernel = C(0.7) * Matern([1.0, 0.5], nu=2.5)
    rng = np.random.RandomState(1)
    X, Z, W = rng.randn(50, 2), rng.randn(4, 2), rng.randn(50, 4)
    whole = input_gradient_contraction(kernel, X, Z, W)
    monkeypatch.setattr(_inputs, "_BLOCK_ENTRIES", 9)  # blocks of 2 rows
    np.testing.assert_allclose(input_gradient_contraction(kernel, X, Z, W), whole, rtol=1e-12)


def test_symmetric_weights_on_the_basis_give_half_the_gradient_of_the_quadratic_form():
    # d/dZ sum_ab D_ab k(z_a, z_b) = 2 G(Z, Z, D) for symmetric D (the K_uu term of refinement)
    kernel = C(1.3) * RBF([0.8, 1.7])
    rng = np.random.RandomState(2)
    Z = rng.randn(5, 2)
    D = rng.randn(5, 5)
    D = D + D.T
    G = input_gradient_contraction(kernel, Z, Z, D)
    h = 1e-6
    fd = np.zeros_like(Z)
    for j in range(5):
        for k in range(2):
            Zp, Zm = Z.copy(), Z.copy()
            Zp[j, k] += h
            Zm[j, k] -= h
            fd[j, k] = (np.sum(D * kernel(Zp)) - np.sum(D * kernel(Zm))) / (2 * h)
    np.testing.assert_allclose(2 * G, fd, atol=1e-6 * np.abs(fd).max())


@pytest.mark.parametrize(
    "kernel", [DotProduct(1.0), ExpSineSquared(), RBF(1.0) + DotProduct(), Matern(nu=0.7)]
)
def test_kernels_without_a_closed_form_are_refused(kernel):
    assert not supports_input_gradient(kernel)
    with pytest.raises(ValueError, match="gradient in its inputs"):
        input_gradient_contraction(kernel, np.zeros((2, 1)), np.ones((1, 1)), np.ones((2, 1)))


GIVEN_BLOCK_KERNELS = {
    "rbf": RBF(1.3),
    "c-rbf-ard": C(2.0) * RBF([0.5, 1.0, 2.0]),
    "rbf-c": RBF(0.8) * C(0.5),
    "fixed-c-rbf": C(2.0, constant_value_bounds="fixed") * RBF([0.5, 1.0, 2.0]),
}


@pytest.mark.parametrize("name", GIVEN_BLOCK_KERNELS)
def test_contractions_from_a_given_block_equal_the_kernel_passes(name):
    from skgpsparse.kernels._contraction import contract_given_block, iter_kernel_contractions

    kernel = GIVEN_BLOCK_KERNELS[name]
    rng = np.random.RandomState(2)
    X, Z, W = rng.randn(90, 3) + 4.0, rng.randn(7, 3) + 4.0, rng.randn(90, 7)
    grad_theta, G = contract_given_block(kernel, X, Z, kernel(X, Z), W)
    # independent: the closed-form input terms and the hyperparameter contraction passes
    np.testing.assert_allclose(G, input_gradient_contraction(kernel, X, Z, W), rtol=1e-10)
    expected = sum(c(W[rows]) for rows, _, c in iter_kernel_contractions(kernel, X, Z))
    np.testing.assert_allclose(grad_theta, expected, rtol=1e-10)
    # and the dense derivative of scikit-learn's kernel
    fd = _central_differences(kernel, X, Z, W)
    np.testing.assert_allclose(G, fd, rtol=0, atol=1e-6 * np.abs(fd).max())
    _, G_only = contract_given_block(kernel, X, Z, kernel(X, Z), W, eval_theta=False)
    np.testing.assert_array_equal(G_only, G)


def test_contractions_from_a_given_block_decline_other_kernels_and_far_rows():
    from skgpsparse.kernels._contraction import contract_given_block

    rng = np.random.RandomState(3)
    X, Z, W = rng.randn(20, 2), rng.randn(4, 2), rng.randn(20, 4)
    matern = Matern(1.0, nu=1.5)
    assert contract_given_block(matern, X, Z, matern(X, Z), W) is None
    far = X.copy()
    far[5] = 1e3  # |s|^2 / 2 beyond the fast path's limit
    assert contract_given_block(RBF(1.0), far, Z, RBF(1.0)(far, Z), W) is None
