"""Kernel values and gradients of inputs so far apart that squared distances overflow."""

import numpy as np
import pytest
from sklearn.gaussian_process.kernels import RBF, Matern, RationalQuadratic

from skgpsparse.kernels import kernel_gradient

KERNELS = [
    RBF(1.0),
    RBF([1.0, 2.0]),
    Matern(1.0, nu=1.5),
    Matern(1.0, nu=0.5),
    RationalQuadratic(1.0, 1.0),
]


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_gradients_of_far_apart_inputs_are_their_limit_zero(kernel):
    # squared distances beyond the float range: the kernel is 0 there, and so is every
    # gradient entry (the kernel decays faster than any power of the distance)
    rng = np.random.RandomState(0)
    X, Z = rng.normal(size=(5, 2)) * 1e200, rng.normal(size=(4, 2)) * 1e200
    K, dK = kernel_gradient(kernel, X, Z)
    assert np.all(np.isfinite(K)) and np.all(np.isfinite(dK))
    np.testing.assert_array_equal(K, 0.0)
    np.testing.assert_array_equal(dK, 0.0)
    # ordinary inputs are untouched: scikit-learn's own values and theta-gradients
    X1, Z1 = X * 1e-200, Z * 1e-200
    np.testing.assert_allclose(kernel_gradient(kernel, X1, Z1)[0], kernel(X1, Z1), rtol=1e-12)
    K_ref, dK_ref = kernel(X1, eval_gradient=True)
    K1, dK1 = kernel_gradient(kernel, X1, X1)
    np.testing.assert_allclose(K1, K_ref, rtol=1e-12)
    np.testing.assert_allclose(dK1, dK_ref, rtol=1e-10, atol=1e-14)
