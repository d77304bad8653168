"""Dense O(n^3) references for the ADF classifier, shared by the classifier test modules."""

import numpy as np


def binary_problem(n=30, d=2, seed=0):
    """A small, noisy, linearly separable problem with labels in {-1, +1}."""
    rng = np.random.RandomState(seed)
    X = rng.randn(n, d)
    y = np.where(X[:, 0] + 0.4 * rng.randn(n) > 0, 1.0, -1.0)
    return X, y


def dense_posterior(kernel, X, basis, site_precision, site_mean):
    """``f = A Pi m`` and ``A = (K^-1 + Pi)^-1`` with sites only on the basis.

    Computed as ``A = K - K S B^-1 S K`` with ``S = Pi^1/2`` and ``B = I + S K S``, which avoids
    ``K^-1`` (additive-model paper, section 2).
    """
    n = X.shape[0]
    K = kernel(X)
    pi, m = np.zeros(n), np.zeros(n)
    pi[basis], m[basis] = site_precision, site_mean
    s = np.sqrt(pi)
    B = np.eye(n) + s[:, None] * K * s[None, :]
    A = K - K @ (s[:, None] * np.linalg.solve(B, s[:, None] * K))
    return A @ (pi * m), A
