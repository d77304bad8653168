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
from sklearn.utils import check_random_state
from sklearn.utils.validation import validate_data

from ..kernels._columns import iter_cross_kernel
from ..kernels._structured import refuse_structured

__all__ = ["EXACT_ROWS", "low_rank_draws", "low_rank_sample_y", "sample_y"]

# Up to this many query rows, draws use the whole n x n predictive covariance.
EXACT_ROWS = 2000


def _psd_root(M):
    """A square root ``R`` with ``R R^T = M`` for a symmetric PSD ``M`` (negatives clipped)."""
    w, V = eigh(0.5 * (M + M.T))
    return V * np.sqrt(np.clip(w, 0.0, None))


def low_rank_draws(kernel, X, basis_vectors, L, S, n_samples, rng, out=None):
    """``n_samples`` zero-mean draws (``n x n_samples``) of the low-rank-plus-diagonal form.

    ``A^T (I - S) A`` through the basis plus ``diag(K_** - A^T A)`` per row (see the module
    docstring), each row's variance made ``k_** - a^T S a`` exactly; ``rng`` is a ``RandomState``.
    ``out`` (``n x n_samples``, a view is fine) receives the draws if given.
    """
    p = L.shape[0]
    root = _psd_root(np.eye(p) - S)  # A^T (I - S) A = (root^T A)^T (root^T A)
    z = rng.standard_normal((p, n_samples))
    coef = root @ z  # p x n_samples, shared by every row block
    out = np.empty((X.shape[0], n_samples)) if out is None else out
    for rows, K in iter_cross_kernel(kernel, X, basis_vectors):
        A = solve_triangular(L, K.T, lower=True, check_finite=False)
        # each row's variance is predict's, k_** - a^T S a: with a large amplitude and a small
        # noise, round-off in I - S (clipped to PSD) can be a large share of it
        variance = np.clip(kernel.diag(X[rows]) - np.einsum("ij,ij->j", A, S @ A), 0.0, None)
        basis_part = np.einsum("ij,ij->j", root.T @ A, root.T @ A)
        shrink = np.sqrt(np.minimum(1.0, variance / np.maximum(basis_part, 1e-300)))
        rest = np.clip(variance - basis_part, 0.0, None)
        out[rows] = (A.T @ coef) * shrink[:, None]
        out[rows] += np.sqrt(rest)[:, None] * rng.standard_normal((len(rest), n_samples))
    return out


def low_rank_sample_y(kernel, X, basis_vectors, L, S, mean, scales, n_samples, rng):
    """``sample_y``'s draws beyond :data:`EXACT_ROWS` rows, in the targets' units.

    Independent latent draws per target (:func:`low_rank_draws`), each scaled by its
    target's ``scales`` entry and shifted by its ``mean`` column in place: the call holds
    its output and ``mean``. ``mean`` is ``(n,)`` or ``(n, n_targets)``; the
    draws are ``(n, n_samples)`` or ``(n, n_targets, n_samples)``.
    """
    warnings.warn(
        f"sample_y on more than {EXACT_ROWS} rows draws the part of the prior that the basis "
        "does not explain independently per row (its variance is exact, its covariance "
        "between rows is left out); pass fewer rows at a time for draws with the full "
        "predictive covariance.",
        UserWarning,
        stacklevel=3,
    )
    columns = mean.reshape(len(X), -1).T
    out = np.empty((len(X), len(columns), n_samples))
    for t, (mean_t, scale) in enumerate(zip(columns, np.ravel(scales))):
        draws = low_rank_draws(kernel, X, basis_vectors, L, S, n_samples, rng, out[:, t])
        draws *= scale
        draws += mean_t[:, None]
    return out[:, 0] if mean.ndim == 1 else out


def _draws(model, X, n_samples, rng):
    """``model.sample_y`` on a validated ``X`` (``SparseGPRegressor.sample_y``)."""
    if X.shape[0] <= EXACT_ROWS or not hasattr(model, "_predictor"):
        y_mean, y_cov = model._predict_validated(X, return_cov=True)  # X is validated
        means, covs = y_mean.reshape(len(X), -1), y_cov.reshape(len(X), len(X), -1)
        draws = [rng.multivariate_normal(means[:, t], covs[..., t], n_samples).T
                 for t in range(means.shape[1])]
        return draws[0] if y_mean.ndim == 1 else np.stack(draws, axis=1)
    # independent latent draws per target, each in its target's units
    return low_rank_sample_y(
        model.kernel_, X, model.basis_vectors_, model._predictor.L, model._predictor.S,
        model._predict_validated(X), model._y_train_std, n_samples, rng,
    )


# SparseGPRegressor.sample_y (assigned in the class body)
def sample_y(self, X, n_samples=1, random_state=0):
    """Draw functions from the predictive distribution at ``X`` (the prior if unfitted).

    As scikit-learn's ``GaussianProcessRegressor.sample_y``: the draws follow the latent
    predictive mean and covariance of ``predict(X, return_cov=True)``. Beyond a few
    thousand rows the covariance is not formed: the part of it carried by the basis is
    drawn exactly and the rest independently per row, with a ``UserWarning``.

    Parameters
    ----------
    X : array-like of shape (n_samples_X, n_features)
        Query points.
    n_samples : int, default=1
        Number of draws.
    random_state : int, RandomState instance or None, default=0
        Randomness of the draws.

    Returns
    -------
    y_samples : ndarray of shape (n_samples_X, n_samples) or \
            (n_samples_X, n_targets, n_samples)
        The draws, in the units of the targets.
    """
    refuse_structured(self, "sample_y")
    if getattr(self, "_latent", None) is not None:
        raise ValueError(
            f"sample_y draws the Gaussian regressor's latent functions; with likelihood="
            f"{self.likelihood!r} draw from predict(X, return_cov=True)'s moments instead."
        )
    X = validate_data(self, X, reset=False, dtype=np.float64)
    return _draws(self, X, n_samples, check_random_state(random_state))
