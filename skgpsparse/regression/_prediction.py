"""Prediction of the sparse GP regressor: the mean and the projected-process variance."""

import warnings

import numpy as np
from scipy.linalg import LinAlgError, solve_triangular
from scipy.linalg.lapack import dtrtrs

from ..kernels._columns import CrossKernel

__all__ = ["RegressionPredictor"]


def _solve_lower(L, B):
    """``L^-1 B`` for a C-contiguous lower-triangular float64 ``L``.

    The LAPACK call ``solve_triangular(L, B, lower=True, check_finite=False)`` makes (``trtrs``
    on the transposed, Fortran-ordered factor), so the result is the same to the bit, without
    the wrapper's per-call argument handling (most of the time of a one-row solve, p = 200).
    """
    if B.size == 0 or not L.flags.c_contiguous:
        return solve_triangular(L, B, lower=True, check_finite=False)
    x, info = dtrtrs(L.T, B, lower=0, trans=1)
    if info > 0:
        raise LinAlgError(f"singular matrix: resolution failed at diagonal {info - 1}")
    return x


def _clip_variance(var, prior):
    neg = var < 0
    if np.any(var < -1e-8 * np.maximum(prior, np.finfo(float).tiny)):
        warnings.warn(
            "Predicted variances smaller than 0 (round-off). Setting them to 0.",
            UserWarning,
        )
    var[neg] = 0.0
    return var


class RegressionPredictor:
    """What prediction needs of a fitted regressor, formed once at the end of the fit.

    The mean ``k_u(x)^T alpha`` and the projected-process variance (GPML eq. (8.27))
    ``k(x, x) - |L^-1 k_u|^2 + s2 |R^-1 L^-1 k_u|^2`` with ``L L^T = K_uu`` and
    ``R R^T = s2 I + L^-1 K_uf K_fu L^-T`` (the state's factors). The kernel's set-up against
    the basis (:class:`~skgpsparse.kernels._columns.CrossKernel`) is kept, so that a call on
    one row costs its O(p d + p^2) arithmetic and little else.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        The fitted kernel.
    basis_vectors : ndarray of shape (p, n_features)
    alpha : ndarray of shape (p,)
        Weights of the mean, in the units of ``y``.
    L, R : ndarray of shape (p, p)
        The lower Cholesky factors above (C-contiguous).
    noise_variance : float
        ``s2``, in the units of the fitted (normalised) targets.
    y_mean, y_std : float
        The target normalisation (0 and 1 without ``normalize_y``).
    """

    def __init__(self, kernel, basis_vectors, alpha, L, R, noise_variance, y_mean, y_std):
        self.cross = CrossKernel(kernel, basis_vectors)
        self.kernel, self.alpha, self.L, self.R = kernel, alpha, L, R
        self.noise_variance, self.y_mean, self.y_std = noise_variance, y_mean, y_std

    def predict(self, X, return_std=False, return_cov=False):
        """Mean, and the latent standard deviation or covariance, at the rows of ``X`` (float64).

        See :meth:`~skgpsparse.SparseGPRegressor.predict`; at most one of ``return_std`` and
        ``return_cov``.
        """
        m = X.shape[0]
        mean = np.empty(m)
        var = np.empty(m) if return_std else None
        prior = self.cross.diag(X) if (return_std or return_cov) else None
        A_all = None
        if return_cov:
            A_all = np.empty((len(self.alpha), m))
        s2 = self.noise_variance
        for rows, K in self.cross.blocks(X):
            mean[rows] = K @ self.alpha
            if return_std or return_cov:
                A = _solve_lower(self.L, K.T)
                if return_cov:
                    A_all[:, rows] = A
                else:
                    B = _solve_lower(self.R, A)
                    # GPML eq. (8.27): k** - |L^-1 k*|^2 + s2 |R^-1 L^-1 k*|^2.
                    var[rows] = (
                        prior[rows]
                        - np.einsum("ij,ij->j", A, A)
                        + s2 * np.einsum("ij,ij->j", B, B)
                    )
        mean += self.y_mean
        if return_std:
            var = _clip_variance(var, prior)
            return mean, np.sqrt(var) * self.y_std
        if return_cov:
            B = _solve_lower(self.R, A_all)
            cov = self.kernel(X) - A_all.T @ A_all + s2 * (B.T @ B)
            diag = _clip_variance(np.diag(cov).copy(), prior)
            np.fill_diagonal(cov, diag)
            return mean, cov * self.y_std**2
        return mean
