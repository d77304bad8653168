"""Predictive factors of the fitted regressor, with the jitter only where strictly needed.

The projected-process prediction (GPML eqs. (8.26)-(8.27)) on a basis ``X_u`` is::

    mean(x) = k_u^T Sigma K_uf y,      Sigma^-1 = K_uf K_fu + s2 K_uu,
    var(x)  = k(x, x) - k_u^T (K_uu^-1 - s2 Sigma) k_u,

with ``k_u = k(X_u, x)``. The selection state (:mod:`skgpsparse.regression._state`) keeps
``L L^T = K_uu + j I`` with the jitter ``j = 1e-8 * mean k(x_i, x_i)`` and
``R R^T = V V^T + s2 I``, ``V = L^-1 K_uf``. Predicting from them as they are (``alpha_p`` of
cost (2), ``k(x, x) - |L^-1 k_u|^2 + s2 |R^-1 L^-1 k_u|^2``) puts ``j I`` into ``K_uu`` and
``s2 j I`` into ``Sigma^-1``: in every direction where ``K_uu``'s eigenvalue is not large
against ``j``. With every training row in the basis the model is the exact GP, yet that
prediction differed from scikit-learn's ``GaussianProcessRegressor`` by up to 5e-5 in the
mean and 2e-7 in the standard deviation (n = 100 to 220, ``cond(K) >= 1e9``); on a smaller
basis it differed from the jitter-free formulas by up to 2e-3 (``cond(K_uu) = 1e9``).

Here ``L`` is only a preconditioner and the model's jitter is ``delta << j``. In the
whitened coordinates of ``L`` (``a = L^-1 k_u``)::

    M  = L^-1 (K_uu + delta I) L^-T                  = I - (j - delta) L^-1 L^-T
    A' = L^-1 (K_uf K_fu + s2 (K_uu + delta I)) L^-T = R R^T - s2 (j - delta) L^-1 L^-T
    alpha = L^-T A'^-1 V y                              (mean(x) = k_u^T alpha)
    var(x) = k(x, x) - a^T M^-1 V V^T A'^-1 a,          V V^T = R R^T - s2 I,

the last being ``a^T (M^-1 - s2 A'^-1) a`` without its cancellation
(``M^-1 - s2 A'^-1 = M^-1 (A' - s2 M) A'^-1``). Everything comes from the state's ``p x p``
factors and ``V y``: O(p^3), no pass over the data. ``delta = j`` gives back the state's
model exactly (``M = I``, ``A' = R R^T``).

Where the jitter is strictly needed
-----------------------------------
The Cholesky factor of ``K_uu + j I`` is that of a matrix within about ``eps lambda_max`` of
it, so eigenvalues of ``K_uu`` below that (smooth kernels, dense or repeated rows) are not
determined, and neither ``M`` nor ``A'`` is in those directions. ``delta`` starts at
``eps tr(K_uu + j I)`` and grows tenfold until ``M`` and ``A'`` have Cholesky factors whose
pivots stand clear of rounding (``pivot^2 > p eps`` times the largest diagonal entry), at
most to ``j``. Rows closer than about 1e-5 length scales are left with the effect of
``delta`` on their nearly singular pair (errors of a few 1e-8 in the mean at 1e-6 length
scales): there ``K_uu``'s eigenvalue is itself within a few hundred ``eps lambda_max``.
"""

import warnings
from typing import NamedTuple

import numpy as np
from scipy.linalg import LinAlgError, cho_solve, cholesky
from scipy.linalg.blas import dtrmm
from scipy.linalg.lapack import dtrtri

from ..kernels._columns import CrossKernel
from ..linalg import cholesky_append, solve_lower
from ..rows._blocks import block_rows, map_row_blocks
from ._targets import to_target_units

__all__ = ["PredictionFactors", "RegressionPredictor", "exact_factor", "prediction_factors"]

_EPS = np.finfo(float).eps
# Tenfold steps of delta between eps tr(K_uu) and the state's jitter: at most ~8 attempts.
_DELTA_STEP = 10.0
# Kernel values per prediction block (512 kB): the block's passes run in cache, and its arrays
# reuse the memory freed by the previous block's instead of faulting in fresh pages. The
# Matern values hold two such arrays, so that 1 MB blocks overflowed a 512 kB L2 cache: 2,000
# rows at p = 100 to 200 took 1.25-1.35 times as long as in 512 kB blocks (minima of 40 calls,
# AMD EPYC, 2026-11-27), which in turn were faster than 256 kB ones (Python's per-block cost).
_CACHE_ENTRIES = 1 << 16


class PredictionFactors(NamedTuple):
    """What prediction needs, in the units of the fitted (normalised) targets."""

    alpha: np.ndarray  # (p,) weights of the mean, mean(x) = k_u(x)^T alpha
    S: np.ndarray  # (p, p) symmetric, var(x) = k(x, x) - a^T S a with a = L^-1 k_u(x)
    jitter: float  # delta, the jitter of K_uu in the predictions
    A_factor: np.ndarray = None  # (p, p) lower factor of A' (R itself when delta = jitter)


def _clear_cholesky(matrix):
    """Lower Cholesky factor, or None if it fails or a pivot is at the level of rounding."""
    try:
        factor = cholesky(matrix, lower=True, check_finite=False)
    except LinAlgError:
        return None
    floor = matrix.shape[0] * _EPS * float(np.max(np.diag(matrix)))
    return factor if float(np.min(np.diag(factor))) ** 2 > floor else None


def prediction_factors(L, R, Vy, jitter, noise_variance):
    """Projected-process predictive factors (GPML eqs. (8.26)-(8.27)) with a minimal jitter.

    Parameters
    ----------
    L : ndarray of shape (p, p)
        Lower Cholesky factor of ``K_uu + jitter I``.
    R : ndarray of shape (p, p)
        Lower Cholesky factor of ``V V^T + s2 I`` with ``V = L^-1 K_uf``.
    Vy : ndarray of shape (p,) or (p, n_targets)
        ``V y``.
    jitter : float
        The jitter ``j >= 0`` in ``L``.
    noise_variance : float
        ``s2 > 0``.

    Returns
    -------
    PredictionFactors
        ``alpha`` (mean weights), ``S`` (variance matrix in the coordinates ``L^-1 k_u``) and
        the jitter ``delta`` they use (``delta <= jitter``; see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.linalg import cholesky, solve_triangular
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.regression._prediction import prediction_factors
    >>> X = np.linspace(0, 3, 8).reshape(-1, 1); y = np.sin(X[:, 0]); s2, j = 0.01, 1e-8
    >>> K = RBF()(X)  # every row in the basis: the exact GP
    >>> L = cholesky(K + j * np.eye(8), lower=True)
    >>> V = solve_triangular(L, K, lower=True)
    >>> R = cholesky(V @ V.T + s2 * np.eye(8), lower=True)
    >>> f = prediction_factors(L, R, V @ y, j, s2)
    >>> bool(np.allclose(f.alpha, np.linalg.solve(K + s2 * np.eye(8), y), atol=1e-9))
    True
    """
    p = L.shape[0]
    s2 = float(noise_variance)
    jitter = max(float(jitter), 0.0)
    eye = np.eye(p)
    if p == 0:
        return PredictionFactors(np.zeros((0,) + np.shape(Vy)[1:]), np.zeros((0, 0)), jitter)
    L_inv = solve_lower(L, eye)
    G = L_inv @ L_inv.T  # L^-1 L^-T = (L^T L)^-1
    A = R @ R.T  # V V^T + s2 I
    delta = _EPS * float(np.sum(L * L))  # eps tr(K_uu + j I)
    while True:
        if delta >= jitter:
            # the state's model: M = I, A' = R R^T
            delta, M_factor, A_factor = jitter, None, R
            break
        excess = jitter - delta
        M = eye - excess * G
        A_delta = A - (s2 * excess) * G
        M_factor = _clear_cholesky(0.5 * (M + M.T))
        A_factor = _clear_cholesky(0.5 * (A_delta + A_delta.T)) if M_factor is not None else None
        if A_factor is not None:
            break
        delta *= _DELTA_STEP

    # GPML eq. (8.26): alpha = Sigma K_uf y = L^-T A'^-1 V y
    w = cho_solve((A_factor, True), Vy, check_finite=False)
    alpha = solve_lower(L, w, trans=1)
    # GPML eq. (8.27): S = M^-1 V V^T A'^-1 (= M^-1 - s2 A'^-1), symmetrised
    VVt = A - s2 * eye
    X = VVt if M_factor is None else cho_solve((M_factor, True), VVt, check_finite=False)
    S = cho_solve((A_factor, True), X.T, check_finite=False).T
    S = 0.5 * (S + S.T)
    return PredictionFactors(alpha, S, delta, A_factor)


def exact_factor(L, jitter, noise_variance, previous=None):
    """Lower Cholesky factor of ``K_uu + s2 I`` from ``L L^T = K_uu + j I``, or None.

    With every training row in the basis the model is the exact GP, whose variance is
    ``k(x, x) - k_u^T (K + s2 I)^-1 k_u`` (GPML eq. (2.26)): one triangular solve per row
    with this factor, where :meth:`RegressionPredictor.latent`'s general form
    ``a^T S a`` takes a solve and a ``p x p`` product. It is scikit-learn's form, without
    the jitter ``delta`` of :func:`prediction_factors` (the exact GP needs none: ``s2 > 0``
    keeps ``K + s2 I`` positive definite). ``K_uu = L L^T - j I`` holds to about
    ``p eps k(x, x)``, so an ``s2`` below the jitter ``j`` (a large prior variance against a
    tiny noise, as in Bayesian optimisation) still gives ``K + s2 I`` to that accuracy: None
    only when a pivot is at the level of rounding (``pivot^2 <= p eps`` times the largest
    diagonal entry, as :func:`prediction_factors` asks) or the factor fails.
    ``noise_variance`` may be an array of the basis rows' noise variances (per-row noise).
    ``previous``: this factor for the leading basis vectors of ``L`` (a basis grown by
    ``partial_fit``), extended by one ``cholesky_append`` per new vector, O(p^2) each, instead
    of factored anew in O(p^3).

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.linalg import cholesky
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.regression._prediction import exact_factor
    >>> K = RBF()(np.linspace(0, 3, 6).reshape(-1, 1))
    >>> W = exact_factor(cholesky(K + 1e-8 * np.eye(6), lower=True), 1e-8, 0.01)
    >>> bool(np.allclose(W @ W.T, K + 0.01 * np.eye(6)))
    True
    """
    # an array: each basis row's own noise (per-row noise or weights, ._row_noise)
    s2 = noise_variance if np.ndim(noise_variance) else float(noise_variance)
    j = max(float(jitter), 0.0)
    if not np.all(s2 > 0):
        return None
    p = L.shape[0]
    if previous is not None and previous.shape[0] < p:
        W = previous
        diagonal = np.einsum("ij,ij->i", L, L) - j + s2  # K_uu + s2 I's diagonal
        floor = p * _EPS * float(np.max(diagonal))
        try:
            for i in range(previous.shape[0], p):
                # K_uu's new column off the diagonal is L's (the jitter is on the diagonal only)
                W = cholesky_append(W, L[:i, :i] @ L[i, :i], float(diagonal[i]))
                if not W[i, i] ** 2 > floor:
                    return None
            return np.ascontiguousarray(W)
        except LinAlgError:
            pass  # factored anew below
    C = L @ L.T
    C[np.diag_indices_from(C)] += s2 - j
    W = _clear_cholesky(C)
    return None if W is None else np.ascontiguousarray(W)


def _clip_variance(var, prior):
    """Set round-off negatives to 0; warn when one is beyond round-off of the prior."""
    neg = var < 0
    if np.any(var < -1e-8 * np.maximum(prior, np.finfo(float).tiny)):
        warnings.warn(
            "Predicted variances smaller than 0 (round-off). Setting them to 0.",
            UserWarning,
        )
    var[neg] = 0.0
    return var


def _inverse_lower(L):
    """``L^-T`` (upper triangular, Fortran-ordered) of a C-contiguous lower factor ``L``
    (LAPACK ``trtri`` on its transposed view), or None if ``trtri`` reports a zero pivot."""
    inverse, info = dtrtri(L.T, lower=0)
    return inverse if info == 0 else None


def _bordered_inverse(L, inverse):
    """``L^-T`` (as :func:`_inverse_lower`) of a lower factor ``L`` whose leading block's
    ``L_0^-T`` is ``inverse``, in O(k p^2) for ``k`` new rows ``[B, D]`` instead of trtri's
    O(p^3 / 3): by block inversion ``L^-1 = [[L_0^-1, 0], [-D^-1 B L_0^-1, D^-1]]``, so
    ``L^-T`` is ``inverse`` bordered by the column block ``-inverse B^T D^-T`` over ``D^-T``.
    None if ``D``'s inverse does (a zero pivot)."""
    p0, p = inverse.shape[0], L.shape[0]
    D_inv_T = _inverse_lower(np.ascontiguousarray(L[p0:, p0:]))
    if D_inv_T is None:
        return None
    out = np.zeros((p, p), order="F")
    out[:p0, :p0] = inverse
    out[:p0, p0:] = -(inverse @ L[p0:, :p0].T) @ D_inv_T
    out[p0:, p0:] = D_inv_T
    return out


def _whiten_rows(factor, inverse, K):
    """``factor^-1 K^T`` (``p x m``) for a block ``K`` (``m x p``) that may be overwritten.

    With ``inverse = factor^-T`` (:func:`_inverse_lower`) it is one triangular product
    (BLAS ``trmm``), about twice as fast as the triangular solve at a few hundred rows
    (``p`` = 200: 2.1 against 6.2 ms for 655 rows, one run); the inverse of a Cholesky
    factor with pivots clear of rounding adds an error of the solve's order.
    """
    if inverse is None:
        return solve_lower(factor, K.T)
    # K.T is K's Fortran-ordered view: trmm writes L^-1 K^T into K's memory
    return dtrmm(1.0, inverse, K.T, lower=0, trans_a=1, overwrite_b=1)


class RegressionPredictor:
    """What prediction needs of a fitted regressor, formed once at the end of the fit.

    The mean ``k_u(x)^T alpha`` and GPML eq. (8.27) as ``k(x, x) - a^T S a`` with
    ``a = L^-1 k_u(x)`` (see :func:`prediction_factors`), in the units of the fitted targets.
    The kernel's set-up against the basis (:class:`~skgpsparse.kernels._columns.CrossKernel`)
    is kept, so that a call on one row costs its O(p d + p^2) arithmetic and little else.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        The fitted kernel.
    basis_vectors : ndarray of shape (p, n_features)
    alpha : ndarray of shape (p,) or (p, n_targets)
        Weights of the mean, in the units of the fitted targets.
    L : ndarray of shape (p, p)
        Lower Cholesky factor of the jittered ``K_uu`` (the preconditioner of ``S``).
    S : ndarray of shape (p, p)
        The variance matrix of :func:`prediction_factors`.
    exact : ndarray of shape (p, p) or None, default=None
        With every training row in the basis (the exact GP), the lower Cholesky factor of
        ``K_uu + s2 I`` (:func:`exact_factor`), from which the variances are computed with
        one triangular solve per block of rows (a product with the factor's inverse for a
        call on at least ``p`` rows).
    """

    def __init__(self, kernel, basis_vectors, alpha, L, S, exact=None):
        self.cross = CrossKernel(kernel, basis_vectors)
        self.kernel, self.alpha = kernel, alpha
        self.L, self.S = np.ascontiguousarray(L), np.ascontiguousarray(S)
        self.exact = exact
        self._inverse = (None, None)  # (factor, factor^-T), made on a first call of >= p rows

    def inherit_inverse(self, previous):
        """Keep ``previous``'s inverse of its exact factor when this predictor's exact factor
        extends it (``partial_fit`` growing the basis, :func:`exact_factor`'s ``previous``):
        the first large block then borders it (O(p^2) per new row) instead of inverting the
        whole factor."""
        factor, inverse = previous._inverse
        if (
            inverse is not None and self.exact is not None
            and factor.shape[0] < self.exact.shape[0]
            and np.array_equal(self.exact[: factor.shape[0], : factor.shape[0]], factor)
        ):
            self._inverse = (factor, inverse)

    def _whiten_exact(self, K, by_inverse):
        """``W^-1 K^T`` for the exact factor ``W`` of ``K_uu + s2 I``: by its inverse (made
        once per factor, O(p^3 / 3), or bordered from the previous factor's) when the call
        predicts at least ``p`` rows (``by_inverse``), where it pays; else by a triangular
        solve. The choice is the call's, not the block's. (The jittered ``K_uu``'s factor
        ``L``, conditioned at the jitter's level, keeps the solve: whitening by its inverse
        moved the variances by 1e-11 relative between block sizes.)"""
        W = self.exact
        if not (by_inverse and K.shape[1] > 0) or not W.flags.c_contiguous:
            return solve_lower(W, K.T)
        held, inverse = self._inverse
        if held is not W:
            extends = held is not None and held.shape[0] < W.shape[0]
            inverse = _bordered_inverse(W, inverse) if extends else None
            self._inverse = (W, _inverse_lower(W) if inverse is None else inverse)
        return _whiten_rows(W, self._inverse[1], K)

    def latent(self, X, return_std=False, return_cov=False):
        """Latent mean, and variance or covariance, at the rows of ``X``, by row blocks.

        Returns ``(mean, var, cov)``; ``var`` is None unless ``return_std``, ``cov`` None
        unless ``return_cov``.
        """
        m = X.shape[0]
        alpha, S = self.alpha, self.S
        mean = np.empty((m,) + alpha.shape[1:])
        var = np.empty(m) if return_std else None
        prior = self.cross.diag(X) if (return_std or return_cov) else None
        A_all = np.empty((len(alpha), m)) if return_cov else None
        by_inverse = m >= len(alpha)
        for rows, K in self.cross.blocks(X):
            mean[rows] = K @ alpha
            if return_cov and self.exact is not None:
                # GPML eq. (2.24): K** - A^T A with A = W^-1 k_u, as the variances below (the
                # jittered L's formula drifts where the jitter exceeds the noise: scikit-learn's
                # test_gpr_consistency_std_cov_non_invertible_kernel, std 25 % off)
                A_all[:, rows] = self._whiten_exact(K, by_inverse)
            elif return_std and not return_cov and self.exact is not None:
                # GPML eq. (2.26): k** - k_u^T (K + s2 I)^-1 k_u, one triangular solve
                A = self._whiten_exact(K, by_inverse)
                A *= A
                var[rows] = prior[rows] - A.sum(axis=0)
            elif return_std or return_cov:
                A = solve_lower(self.L, K.T)  # (the jittered K_uu's factor: a solve)
                if return_cov:
                    A_all[:, rows] = A
                else:
                    # GPML eq. (8.27): k** - a^T (M^-1 - s2 A'^-1) a = k** - a^T S a.
                    # (einsum's reduction over the first axis was slower than both steps)
                    SA = S @ A
                    SA *= A
                    var[rows] = prior[rows] - SA.sum(axis=0)
        cov = None
        if return_std:
            var = _clip_variance(var, prior)
        if return_cov:
            if self.exact is not None:
                cov = self.kernel(X) - A_all.T @ A_all
            else:
                cov = self.kernel(X) - A_all.T @ (S @ A_all)
            np.fill_diagonal(cov, _clip_variance(np.diag(cov).copy(), prior))
        return mean, var, cov

    def predict(self, X, return_std, return_cov, y_mean, y_std):
        """The estimator's ``predict`` in the targets' units and shapes, by blocks of rows.

        Each block of rows (about 1 MB of kernel values, at most the kernel layer's 32 MB
        budget) goes through :meth:`latent` and the targets' scaling as a whole
        array would, into outputs allocated once, so that the call holds one block's
        arrays beyond its input and output. ``return_cov`` is one block: the ``n x n``
        covariance couples every pair of rows.
        """

        def block(X_block):
            mean, var, cov = self.latent(X_block, return_std, return_cov)
            return to_target_units(mean, var, cov, y_mean, y_std)

        if return_cov or X.shape[0] <= 1:  # one block (a single row: nothing to plan)
            return block(X)
        p = self.L.shape[0]
        # blocks that stay in cache through the ~15 passes over them (kernel, exp, variance):
        # a few thousand rows at p = 200 took 0.6 times as long as in one block
        return map_row_blocks(block, X, min(block_rows(p), max(1, _CACHE_ENTRIES // max(p, 1))))
