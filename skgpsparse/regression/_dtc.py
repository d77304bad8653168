"""The DTC evidence of sparse GP regression (GPML eq. (8.17)): shared factors, value, gradient.

The sparse regression model with basis vectors ``X_u`` (``p`` of them) replaces the training
covariance by its Nystrom approximation ``Q_ff = K_fu K_uu^-1 K_uf`` (GPML sec. 8.3.3 / 8.3.4).
Its marginal likelihood (GPML eq. (8.17), the same for SR and PP/DTC) is::

    log q(y | X) = -1/2 y^T C^-1 y - 1/2 log|C| - n/2 log(2 pi),   C = Q_ff + s2 I.

Value, O(n p^2) time and O(n p) memory, never an ``n x n`` array
----------------------------------------------------------------------
With ``L L^T = K_uu + jitter I``, ``V = L^-1 K_uf`` (``p x n``, so ``Q_ff = V^T V``) and
``R R^T = A = s2 I + V V^T`` (``p x p``), the matrix inversion and determinant lemmas
(GPML eqs. A.9, A.10) give::

    C^-1   = (I - V^T A^-1 V) / s2
    log|C| = (n - p) log s2 + 2 sum(log diag R)
    a      = C^-1 y = (y - V^T A^-1 V y) / s2,     y^T C^-1 y = y . a

Gradient, O(n p^2 + n p n_theta) time
-------------------------------------
GPML eq. (5.9): ``d log q / d theta = 1/2 tr((a a^T - C^-1) dC/dtheta)``.

*Noise* (``theta_s = log s2``, ``dC = s2 I``): ``s2/2 (a.a - tr C^-1)`` with
``tr C^-1 = (n - p)/s2 + tr(A^-1)`` (from ``tr(V^T A^-1 V) = tr(A^-1 (A - s2 I)) = p -
s2 tr A^-1``; a sum of positive terms, no cancellation).

*Kernel* (``jitter`` held constant): with ``W = K_uu^-1 K_uf = L^-T V``,
``dQ_ff = dK_fu W + W^T dK_uf - W^T dK_uu W``, so with ``B = W (a a^T - C^-1)`` (``p x n``)::

    1/2 tr((a a^T - C^-1) dQ_ff) = sum_ij B_ij dK_uf_ij - 1/2 sum_ij (B W^T)_ij dK_uu_ij.

The lemmas reduce both to ``p x n`` / ``p x p`` quantities. ``W C^-1 = L^-T A^-1 V``
(``= Sigma^-1 K_uf`` with ``Sigma = s2 K_uu + K_uf K_fu = L A L^T``), hence with ``w = W a``::

    B     = w a^T - L^-T A^-1 V                (``L^-T A^-1``, ``p x p``, formed first: one
                                                 matrix product with ``V``)
    B W^T = w w^T - L^-T (A^-1 V V^T) L^-1      (``A^-1 V V^T = I - s2 A^-1``, formed from
                                                 ``V V^T`` to avoid cancellation)

Both sums are contracted with :func:`skgpsparse.kernels._contraction.iter_kernel_contractions` (the
first chunk by chunk over rows of ``X``), so neither the ``n x p x n_theta`` nor the
``p x p x n_theta`` derivative array is held (for ``RBF`` and ``ConstantKernel * RBF`` neither is
formed). For ``m`` outputs (``y`` of shape ``(n, m)``) the log likelihoods are summed, as in
scikit-learn's ``GaussianProcessRegressor``: ``a`` becomes ``n x m`` and ``C^-1`` is counted ``m``
times.

Cross-covariances ``kernel(X, X_u)`` and ``kernel(X_u, X_u)`` are used throughout, so a
``WhiteKernel`` term contributes nothing: give the noise as ``noise_variance``.

Per-row noise and sample weights
--------------------------------
With a :class:`~skgpsparse.regression._row_noise.RowNoise` (``row_noise``: row ``i``'s noise
``s2 a_i / w_i``) the factors are those of the whitened rows: ``V``'s columns and ``y``'s rows
times ``c_i = (w_i / a_i)^(1/2)``, the noise ``s2`` on each; the value gains the row noise's
constant and the noise derivative its derivative, and the weights of ``dK_uf`` are ``c_i``
times those of the whitened ``K_uf`` (see :mod:`skgpsparse.regression._row_noise`).

Shared factors
--------------
:func:`sparse_factors` computes ``L``, ``V``, ``V V^T``, ``R``, ``a`` and ``log|C|`` once per
theta into a :class:`SparseFactors` tuple; :func:`dtc_value` and :func:`dtc_gradient` read
them, and so does Titsias' bound (:mod:`skgpsparse.regression._vfe`), whose trace term
``tr(K_ff - Q_ff)`` is ``sum_i k(x_i, x_i) - tr(V V^T)`` and whose trace-gradient weights join
``B`` (``dtc_gradient``'s ``trace_weight``), so both objectives make one pass over the rows.
"""

import numbers
from typing import NamedTuple

import numpy as np
from scipy.linalg import LinAlgError, cho_solve, cholesky, solve_triangular
from sklearn.gaussian_process.kernels import Kernel

from ..kernels import iter_kernel
from ..kernels._contraction import iter_kernel_contractions
from ._state import RELATIVE_JITTER

__all__ = [
    "basis_factor",
    "dtc_log_marginal_likelihood",
]

_LOG_2PI = np.log(2.0 * np.pi)


def _check_arguments(kernel, X, y, X_basis, noise_variance, jitter):
    if not isinstance(kernel, Kernel):
        raise TypeError(
            "kernel must be a scikit-learn Kernel instance, got "
            f"{type(kernel).__name__}: {kernel!r}."
        )
    X = np.asarray(X, dtype=np.float64)
    X_basis = np.asarray(X_basis, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features), got shape {X.shape}.")
    if X_basis.ndim != 2 or X_basis.shape[1] != X.shape[1] or X_basis.shape[0] < 1:
        raise ValueError(
            "X_basis must be a 2-D array (n_basis >= 1, n_features) with the "
            f"{X.shape[1]} features of X, got shape {X_basis.shape}."
        )
    if y.ndim not in (1, 2) or y.shape[0] != X.shape[0]:
        raise ValueError(
            f"y must have shape ({X.shape[0]},) or ({X.shape[0]}, n_outputs) to match X, "
            f"got shape {y.shape}."
        )
    for name, value in (("X", X), ("X_basis", X_basis), ("y", y)):
        if not np.all(np.isfinite(value)):
            raise ValueError(f"{name} must contain only finite values (no NaN or inf).")
    if (
        isinstance(noise_variance, bool)
        or not isinstance(noise_variance, numbers.Real)
        or not np.isfinite(noise_variance)
        or noise_variance <= 0
    ):
        raise ValueError(
            f"noise_variance must be a finite real number > 0, got {noise_variance!r}."
        )
    if jitter is not None and (
        isinstance(jitter, bool)
        or not isinstance(jitter, numbers.Real)
        or not np.isfinite(jitter)
        or jitter < 0
    ):
        raise ValueError(f"jitter must be None or a finite real number >= 0, got {jitter!r}.")
    return X, y.reshape(X.shape[0], -1), X_basis


def _cholesky(matrix, name, advice):
    try:
        return cholesky(matrix, lower=True, check_finite=False)
    except LinAlgError as exc:
        raise LinAlgError(f"{name} is not positive definite ({exc}); {advice}") from exc


def dtc_log_marginal_likelihood(
    kernel, X, y, X_basis, noise_variance, *, eval_gradient=False, jitter=None, chunk_size=None,
    row_noise=None,
):
    """Approximate log marginal likelihood of the sparse (DTC / PP) GP, GPML eq. (8.17).

    ``log N(y | 0, Q_ff + s2 I)`` with ``Q_ff = K_fu K_uu^-1 K_uf``, computed in O(n p^2) time
    (plus O(n p n_theta) for the gradient) and O(n p) memory through the matrix inversion and
    determinant lemmas; no ``n x n`` array is formed (see the module docstring).

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        Covariance function; only cross-covariances ``kernel(A, B)`` are evaluated, so a
        ``WhiteKernel`` term contributes nothing (give the noise as ``noise_variance``).
    X : array-like of shape (n_samples, n_features)
        Training inputs.
    y : array-like of shape (n_samples,) or (n_samples, n_outputs)
        Training targets; with several outputs the log likelihoods are summed.
    X_basis : array-like of shape (n_basis, n_features)
        Basis vectors (inducing inputs) ``X_u``.
    noise_variance : float
        Gaussian noise variance ``s2 > 0``.
    eval_gradient : bool, default=False
        Also return the gradient.
    jitter : float, default=None
        Added to the diagonal of ``K_uu`` before its Cholesky factorisation; treated as a
        constant (not differentiated). ``None`` means ``1e-8 * mean(diag(K_uu))``.
    chunk_size : int, default=None
        Rows of ``X`` per kernel block (see :func:`skgpsparse.kernels.iter_kernel_gradient`);
        it changes memory use, not the result.
    row_noise : RowNoise, default=None
        Per-row noise ``s2 a_i / w_i`` (:mod:`skgpsparse.regression._row_noise`); None is
        ``s2`` on every row.

    Returns
    -------
    log_likelihood : float
        ``log q(y | X)``.
    gradient : ndarray of shape (kernel.n_dims + 1,)
        Only if ``eval_gradient``: derivatives with respect to ``kernel.theta`` (log
        hyperparameters, scikit-learn's convention) followed by ``log(noise_variance)``.

    Raises
    ------
    numpy.linalg.LinAlgError
        If ``K_uu + jitter I`` is not positive definite (e.g. repeated basis vectors with
        ``jitter=0``).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel
    >>> from skgpsparse.regression._dtc import dtc_log_marginal_likelihood
    >>> rng = np.random.RandomState(0)
    >>> X = rng.uniform(-3, 3, (50, 1))
    >>> y = np.sin(X[:, 0]) + 0.1 * rng.randn(50)
    >>> kernel = ConstantKernel(1.0) * RBF(1.0)
    >>> lml, grad = dtc_log_marginal_likelihood(
    ...     kernel, X, y, X[:10], 0.01, eval_gradient=True)
    >>> grad.shape  # d/dlog constant, d/dlog length_scale, d/dlog noise
    (3,)
    >>> bool(lml > dtc_log_marginal_likelihood(kernel, X, y, X[:2], 0.01))
    True
    """
    X, Y, X_basis = _check_arguments(kernel, X, y, X_basis, noise_variance, jitter)
    f = sparse_factors(
        kernel, X, Y, X_basis, noise_variance, jitter, eval_gradient, chunk_size, row_noise
    )
    lml = dtc_value(f)
    if not eval_gradient:
        return lml
    return lml, dtc_gradient(kernel, X, X_basis, f, chunk_size=chunk_size)


class SparseFactors(NamedTuple):
    """Factors shared by the DTC likelihood and the VFE bound, computed once per theta.

    With ``L L^T = K_uu + jitter I``, ``V = L^-1 K_uf`` (``Q_ff = V^T V``) and
    ``R R^T = A = s2 I + V V^T`` (the module docstring has the lemmas that use them).
    """

    Y: np.ndarray  # (n, m) targets
    s2: float  # noise variance
    L: np.ndarray  # (p, p) lower factor of K_uu + jitter I
    V: np.ndarray  # (p, n) L^-1 K_uf
    VVt: np.ndarray  # (p, p) V V^T
    R: np.ndarray  # (p, p) lower factor of A = s2 I + V V^T
    a: np.ndarray  # (n, m) C^-1 y
    log_det: float  # log|C| = log|Q_ff + s2 I|
    contract_uu: object  # with eval_gradient, W -> <W, dK_uu> over theta (basis_factor)
    row_noise: object = None  # RowNoise: Y and V are the whitened rows' (._row_noise)


def basis_kernel(kernel, X_basis, eval_gradient):
    """``(K_uu, contract_uu)``: ``K(X_basis, X_basis)`` and, with ``eval_gradient``, the
    callable ``W -> sum_ij W_ij dK_uu_ij / d theta`` (else ``None``).

    The contraction (:func:`~skgpsparse.kernels._contraction.iter_kernel_contractions`)
    never forms the ``p x p x n_theta`` array of ``dK_uu``, which for ARD kernels cost more
    than the rest of the ``p x p`` work of an evaluation.
    """
    # K_uu by the kernel's own call in both cases, so that the value does not depend on
    # eval_gradient (the contraction's blocks form it by another route)
    K_uu = kernel(X_basis, X_basis)
    if not eval_gradient:
        return K_uu, None
    blocks = list(iter_kernel_contractions(kernel, X_basis, X_basis))

    def contract_uu(W):
        return sum(contract(W[rows]) for rows, _, contract in blocks)

    return K_uu, contract_uu


def basis_factor(kernel, X_basis, jitter, eval_gradient):
    """``(L, contract_uu)``: the lower factor of ``K_uu + jitter I`` and, with
    ``eval_gradient``, the contraction with ``dK_uu`` of :func:`basis_kernel` (else
    ``None``). ``jitter=None`` is the state's relative jitter of the mean prior variance on
    the basis."""
    K_uu, contract_uu = basis_kernel(kernel, X_basis, eval_gradient)
    if jitter is None:
        jitter = RELATIVE_JITTER * max(float(np.mean(np.diag(K_uu))), 0.0)
    L = _cholesky(
        K_uu + jitter * np.eye(X_basis.shape[0]), "K_uu + jitter * I",
        "increase `jitter` or remove repeated basis vectors.",
    )
    return L, contract_uu


def sparse_factors(kernel, X, Y, X_basis, noise_variance, jitter, eval_gradient, chunk_size,
                   row_noise=None):
    """:class:`SparseFactors` for checked arguments (``Y`` of shape ``(n, m)``); O(n p^2).

    With ``row_noise``, those of the whitened rows (``V`` and ``Y`` scaled row by row).
    """
    s2 = float(noise_variance)
    n = X.shape[0]
    p = X_basis.shape[0]

    L, contract_uu = basis_factor(kernel, X_basis, jitter, eval_gradient)

    # V = L^-1 K_uf, block by block over the rows of X (Q_ff = V^T V)
    V = np.empty((p, n))
    for rows, K_block in iter_kernel(kernel, X, X_basis, chunk_size=chunk_size):
        V[:, rows] = solve_triangular(L, K_block.T, lower=True, check_finite=False)
    if row_noise is not None:  # the whitened rows (._row_noise)
        V *= row_noise.scale
        Y = row_noise.whiten(Y)
    return factors_from_V(Y, s2, L, V, contract_uu, row_noise)


def factors_from_V(Y, s2, L, V, contract_uu, row_noise=None):
    """:class:`SparseFactors` from ``L`` (the factor of ``K_uu + jitter I``) and
    ``V = L^-1 K_uf``; O(n p^2). With ``row_noise``, ``Y`` and ``V`` are the whitened rows'."""
    n, p = V.shape[1], V.shape[0]
    # A = s2 I + V V^T = R R^T (matrix inversion lemma, GPML eq. A.9)
    VVt = V @ V.T
    A = VVt + s2 * np.eye(p)
    R = _cholesky(A, "s2 * I + V V^T", "increase `noise_variance`.")

    # a = C^-1 y = (y - V^T A^-1 V y) / s2
    a = (Y - V.T @ cho_solve((R, True), V @ Y, check_finite=False)) / s2
    # determinant lemma (GPML eq. A.10): log|C| = (n - p) log s2 + log|A|
    log_det = (n - p) * np.log(s2) + 2.0 * np.sum(np.log(np.diag(R)))
    return SparseFactors(Y, s2, L, V, VVt, R, a, log_det, contract_uu, row_noise)


def dtc_value(f):
    """GPML eq. (8.17) from the factors, summed over the ``m`` outputs."""
    n, m = f.Y.shape
    value = float(-0.5 * np.sum(f.Y * f.a) - 0.5 * m * f.log_det - 0.5 * m * n * _LOG_2PI)
    if f.row_noise is not None:  # the whitening's and the weights' constant (._row_noise)
        value += f.row_noise.log_constant(f.s2, m)
    return value


def dtc_gradient(kernel, X, X_basis, f, *, chunk_size=None, trace_weight=0.0):
    """Gradient of eq. (8.17) in ``(kernel.theta, log s2)`` from the factors.

    ``trace_weight = c`` adds ``m c / 2`` times the kernel gradient of ``tr(Q_ff)`` to the
    kernel part (``m`` outputs): the weights ``m c W`` of ``dK_uf`` and ``m c W W^T`` of
    ``-1/2 dK_uu`` (``W = K_uu^-1 K_uf``, see :mod:`skgpsparse.regression._vfe`) join ``B``
    and ``B W^T`` before the single pass over the rows. ``0`` is the DTC gradient itself.
    """
    gradient = np.empty(kernel.n_dims + 1)
    gradient[-1] = noise_gradient(f)
    if kernel.n_dims:
        B_t, BW_t = gradient_weights(f, trace_weight)
        if f.row_noise is not None:  # d(c K_fu) = c dK_fu: the weights of dK_fu
            B_t *= f.row_noise.scale[:, None]
        gradient[:-1] = kernel_gradient_from_weights(kernel, X, X_basis, f, B_t, BW_t, chunk_size)
    return gradient


def noise_gradient(f):
    """``d (8.17) / d log s2 = s2/2 (sum a^2 - m tr C^-1)``, ``tr C^-1 = (n - p)/s2 + tr A^-1``."""
    n, m = f.Y.shape
    p = f.R.shape[0]
    R_inv = solve_triangular(f.R, np.eye(p), lower=True, check_finite=False)
    trace_C_inv = (n - p) / f.s2 + np.sum(R_inv**2)
    gradient = 0.5 * f.s2 * (np.sum(f.a * f.a) - m * trace_C_inv)
    if f.row_noise is not None:
        gradient += f.row_noise.log_constant_gradient(m)
    return gradient


def gradient_weights(f, trace_weight=0.0):
    """``(B^T, B W^T)``: eq. (8.17)'s derivative is ``<B, dK_uf> - 1/2 <B W^T, dK_uu>``.

    ``B^T`` is ``n x p`` (the layout of ``K(X, X_u)``) and ``B W^T`` is ``p x p`` symmetric;
    ``trace_weight = c`` adds the weights of ``m c / 2`` times ``d tr(Q_ff)`` (see
    :func:`dtc_gradient`). Whatever moves ``K_uf`` and ``K_uu`` (the hyperparameters, the
    basis inputs) is contracted against these two.
    """
    L, R, a, V, VVt = f.L, f.R, f.a, f.V, f.VVt
    m = f.Y.shape[1]
    # w = W a = L^-T V a (p x m)
    w = solve_triangular(L, V @ a, lower=True, trans="T", check_finite=False)
    # B^T = a w^T - m (L^-T (A^-1 - c I) V)^T, the (n x p) weights of dK_fu (c = 0 for
    # the DTC evidence; the trace term adds (m c) W^T = (m c) (L^-T V)^T): the p x p
    # G = L^-T (A^-1 - c I) first, then one matrix product with V (a GEMM instead of
    # three triangular solves with n right-hand sides)
    B_t = a @ w.T
    B_t -= V.T @ (m * residual_weights(L, R, trace_weight)).T
    return B_t, basis_weights(L, R, VVt, w, m, trace_weight)


def basis_weights(L, R, VVt, w, m, trace_weight):
    """``B W^T = w w^T - m L^-T (A^-1 V V^T - c V V^T) L^-1`` (``p x p``, symmetric).

    ``A^-1 V V^T`` is symmetric and formed from ``V V^T`` to avoid cancellation; the trace
    term (``c = trace_weight``) adds ``(m c) W W^T = (m c) L^-T V V^T L^-1``.
    """
    D = cho_solve((R, True), VVt, check_finite=False)
    if trace_weight:
        D -= trace_weight * VVt
    D = 0.5 * (D + D.T)
    D = solve_triangular(L, D, lower=True, trans="T", check_finite=False)
    D = solve_triangular(L, D.T, lower=True, trans="T", check_finite=False)
    return w @ w.T - m * D


def residual_weights(L, R, trace_weight):
    """``G = L^-T (A^-1 - c I)`` (``p x p``, ``A = R R^T``): ``B^T = a w^T - m (G V)^T``."""
    p = L.shape[0]
    G = cho_solve((R, True), np.eye(p), check_finite=False)
    if trace_weight:
        G[np.diag_indices(p)] -= trace_weight
    return solve_triangular(L, G, lower=True, trans="T", check_finite=False)


def kernel_gradient_from_weights(kernel, X, X_basis, f, B_t, BW_t, chunk_size=None):
    """``<B, dK_uf> - 1/2 <B W^T, dK_uu>`` over ``kernel.theta``, GPML eq. (5.9)."""
    grad_theta = -0.5 * f.contract_uu(BW_t)
    blocks = iter_kernel_contractions(kernel, X, X_basis, chunk_size=chunk_size)
    for rows, _, contract in blocks:
        grad_theta += contract(B_t[rows])
    return grad_theta
