"""The predictors of a fitted latent model: the latent moments ``f_* + b``, ``s2_*`` at new rows.

Formed once at the end of a fit from its posterior at the basis, they answer by blocks of rows
with one GEMM per block; the families turn the latent moments into their outputs through the
likelihood (class probabilities, the predictive mean and density of a target).
"""

import numpy as np
from scipy.linalg import cho_solve, cholesky, eigh, solve_triangular

from ..inference._ep import weight_posterior_of
from ..inference._sparse_prior import SparsePrior
from ..kernels._columns import CrossKernel
from ..likelihoods import Probit

__all__ = ["AllRowsPredictor", "BinaryPredictor"]


class BinaryPredictor:
    """What prediction needs of a fitted binary model, formed once at the end of the fit.

    ``f_* = k_*u w`` with ``w = S B^-1 S m_u`` and ``s2_* = k_** - |W k_u*|^2`` (validation
    paper eq. (2.7)), where ``B = I + S K_uu S = L L^T`` (``S = Pi_u^1/2``) under the final
    kernel and ``W = L^-1 S``. As ``B >= I``, ``|L^-1| <= 1``: the explicit (lower triangular)
    factor ``W`` is as accurate as a triangular solve per block, and makes a prediction block
    one GEMM against ``[w, W^T]``, which BLAS runs at full speed on every core (a triangular
    solve of the same O(p^2) per row took twice as long on two threads: 1e6 rows, p = 500).
    The kernel's set-up against the basis (:class:`~skgpsparse.kernels._columns.CrossKernel`)
    is kept too, so that a call on one row costs its O(p d + p^2) arithmetic and little else.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        The fitted kernel.
    basis_vectors : ndarray of shape (p, n_features)
    site_precision, site_mean : ndarray of shape (p,)
        The basis' site parameters ``Pi_u`` and ``m_u``.
    bias : float
        The bias ``b`` of the likelihood ``p(y | f + b)``.
    likelihood : Likelihood, default=None
        ``p(y | f + b)``; None: the probit.
    """

    def __init__(self, kernel, basis_vectors, site_precision, site_mean, bias, likelihood=None):
        s = np.sqrt(site_precision)
        K_uu = kernel(basis_vectors)
        B = np.eye(s.size) + s[:, None] * K_uu * s[None, :]
        L = cholesky(B, lower=True)
        w = s * cho_solve((L, True), s * site_mean)
        W = solve_triangular(L, np.diag(s), lower=True)
        self.projection = np.ascontiguousarray(np.column_stack([w, W.T]))
        self.bias = bias
        self.likelihood = Probit() if likelihood is None else likelihood
        self.cross = CrossKernel(kernel, basis_vectors)

    def latent_mean_and_variance(self, X):
        """Mean of ``f_* + b`` and variance of ``f_*`` at the rows of ``X`` (float64), by
        blocks."""
        mean = np.empty(X.shape[0])
        var = self.cross.diag(X).astype(float)
        for rows, K in self.cross.blocks(X):
            P = K @ self.projection  # [f_*, (W k_u*)^T] for the block's rows
            mean[rows] = P[:, 0] + self.bias
            V = P[:, 1:]
            var[rows] -= np.einsum("ij,ij->i", V, V)
        np.maximum(var, 0.0, out=var)
        return mean, var

    def moderated_margin(self, X):
        """``Phi^-1(P(y = +1 | x_*))``: for the probit ``(f_* + b) / sqrt(1 + s2_*)`` (eq. 2.7)."""
        return self.likelihood.predictive_margin(*self.latent_mean_and_variance(X))

    def log_proba(self, X, y):
        """``log P(y | x_*)`` of labels ``y`` in {-1, +1} at the rows of ``X``."""
        mean, var = self.latent_mean_and_variance(X)
        return self.likelihood.log_predictive(y, mean, var)


class AllRowsPredictor(BinaryPredictor):
    """Prediction from the Gaussian posterior of the latents at the basis.

    With ``q(w) = N(m_w, B^-1)`` and ``u = L w`` (``K_uu = L L^T``), the latent at ``x_*`` has
    mean ``k_*u L^-T m_w`` and variance ``k_** - k_*u L^-T (I - B^-1) L^-1 k_u*`` (the FITC /
    projected-process predictive, GPML eq. (8.27) with EP's sites in place of the noise). The
    PSD matrix ``L^-T (I - B^-1) L^-1 = W^T W`` is factored once (eigh), so that a prediction
    block is one GEMM against ``[w, W^T]`` as in :class:`BinaryPredictor`.
    """

    def __init__(self, kernel, basis_vectors, X, y, tau, nu, bias, prior="fitc",
                 likelihood=None, weights=None):
        # weights: the training rows' (each counts as that many copies of its site)
        sparse = SparsePrior(kernel, X, basis_vectors, prior, weights=weights)
        L_B, _, mean_w = weight_posterior_of(sparse, tau, nu)
        self._set_factors(kernel, basis_vectors, sparse.L, L_B, mean_w, bias, likelihood)

    @classmethod
    def from_posterior(cls, kernel, basis_vectors, L, L_B, mean_w, bias, likelihood=None):
        """The predictor of the posterior ``N(mean_w, (L_B L_B^T)^-1)`` of ``w``
        (``K_uu = L L^T``), formed elsewhere (EP over row partitions,
        :mod:`skgpsparse.inference._ep_partitioned`)."""
        predictor = cls.__new__(cls)
        predictor._set_factors(kernel, basis_vectors, L, L_B, mean_w, bias, likelihood)
        return predictor

    def _set_factors(self, kernel, basis_vectors, L, L_B, mean_w, bias, likelihood):
        p = L.shape[0]
        w = solve_triangular(L, mean_w, lower=True, trans="T")
        B_inv = cho_solve((L_B, True), np.eye(p))
        L_inv = solve_triangular(L, np.eye(p), lower=True)
        C = L_inv.T @ (np.eye(p) - B_inv) @ L_inv
        values, vectors = eigh(0.5 * (C + C.T))
        W = np.sqrt(np.maximum(values, 0.0))[:, None] * vectors.T
        self.projection = np.ascontiguousarray(np.column_stack([w, W.T]))
        self.bias = bias
        self.likelihood = Probit() if likelihood is None else likelihood
        self.cross = CrossKernel(kernel, basis_vectors)
