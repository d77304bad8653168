"""Draws of the regressor's latent function at query points: exact, or low-rank by rows.

The model's predictive covariance at query points ``X`` (what ``predict(X, return_cov=True)``
returns) is ``K_** - A^T S A`` with ``A = L^-1 K_u*`` (see :mod:`._prediction`). For a few
thousand rows a draw uses it whole (an ``n x n`` matrix, as scikit-learn's
``GaussianProcessRegressor.sample_y`` does). Beyond that, ``K_** = A^T A + (K_** - Q_**)``
splits it into a low-rank part through the basis, ``A^T (I - S) A``, drawn exactly with a
``p x p`` factor, and the part of the prior the basis does not explain, ``K_** - Q_**``,
drawn independently per row with its diagonal: the covariance between rows that only the
basis carries is kept, memory is O((p + n_samples) n) by row blocks.
"""

import warnings

import numpy as np
from scipy.linalg import eigh, solve_triangular

from ..kernels._columns import iter_cross_kernel

__all__ = ["EXACT_ROWS", "low_rank_draws"]

# Up to this many query rows, draws use the whole n x n predictive covariance.
EXACT_ROWS = 2000


def _psd_root(M):
    """A square root ``R`` with ``R R^T = M`` for a symmetric PSD ``M`` (negatives clipped)."""
    w, V = eigh(0.5 * (M + M.T))
    return V * np.sqrt(np.clip(w, 0.0, None))


def low_rank_draws(kernel, X, basis_vectors, L, S, n_samples, rng):
    """``n_samples`` zero-mean draws (``n x n_samples``) of the low-rank-plus-diagonal form.

    ``A^T (I - S) A`` through the basis plus ``diag(K_** - A^T A)`` per row (see the module
    docstring); ``rng`` is a ``RandomState``.
    """
    warnings.warn(
        f"sample_y on more than {EXACT_ROWS} rows draws the part of the prior that the basis "
        "does not explain independently per row (its variance is exact, its covariance "
        "between rows is left out); pass fewer rows at a time for draws with the full "
        "predictive covariance.",
        UserWarning,
        stacklevel=3,
    )
    p = L.shape[0]
    root = _psd_root(np.eye(p) - S)  # A^T (I - S) A = (root^T A)^T (root^T A)
    z = rng.standard_normal((p, n_samples))
    coef = root @ z  # p x n_samples, shared by every row block
    out = np.empty((X.shape[0], n_samples))
    prior = kernel.diag(X)
    for rows, K in iter_cross_kernel(kernel, X, basis_vectors):
        A = solve_triangular(L, K.T, lower=True, check_finite=False)
        rest = np.clip(prior[rows] - np.einsum("ij,ij->j", A, A), 0.0, None)
        out[rows] = A.T @ coef
        out[rows] += np.sqrt(rest)[:, None] * rng.standard_normal((len(rest), n_samples))
    return out
