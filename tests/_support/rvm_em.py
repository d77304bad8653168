"""A small RVM regression problem and its Subspace EM state, for the RVM factor tests."""

import numpy as np
from sklearn.gaussian_process.kernels import RBF

from skgpsparse.rvm._regression_em import _RegressionEM


def em_model(n=60, seed=7, learn_noise=True, factor_update="update"):
    """``(model, kernel, X, y)``: ``_RegressionEM`` on noisy ``sin`` targets in one input, with
    every training input and a bias as candidate basis functions, none of them active yet."""
    rng = np.random.RandomState(seed)
    X = rng.uniform(-3, 3, size=(n, 1))
    y = np.sin(X[:, 0]) + 0.1 * rng.randn(n)
    centers = np.vstack([X, np.zeros((1, 1))])
    bias_mask = np.zeros(n + 1, dtype=bool)
    bias_mask[n] = True
    kernel = RBF(0.7)
    model = _RegressionEM(
        kernel, X, y, centers, bias_mask, 0.05, learn_noise, 1e9, 1e-12, factor_update
    )
    return model, kernel, X, y
