"""Validation NLP loss of the sparse ADF GP classifier and its hyperparameter gradient.

The loss is the negative log predictive probability over the points outside the basis set
(validation paper eq. (2.8); additive-model paper eq. (4))::

    NLP = -(1 / |u^c|) sum_{i in u^c} log Z_i,   Z_i = int p(y_i | f + b) N(f; f_i, A_ii) df,

(for the probit likelihood ``Z_i = Phi(y_i (f_i + b) / sqrt(1 + A_ii))``; the likelihood object
gives ``log Z_i``, :mod:`skgpsparse.likelihoods`),

where the ADF posterior is built on the basis set ``u`` with the site parameters held FIXED
(validation paper sec. 2.5, step 6: "keeping u and the corresponding site parameters fixed").
With ``S = Pi_u^1/2 = diag(sqrt(p_u))`` and ``B = I + S K_uu S = L L^T`` (validation paper
sec. 2.5, ``A = K - M^T M`` with ``M = L^-1 S K_u.``)::

    f_i  = k_iu S B^-1 S m_u = (L^-1 S k_ui)^T (L^-1 S m_u),
    A_ii = k_ii - |L^-1 S k_ui|^2.

Only products with ``S`` are formed, never ``S^-1``, so sites with ``p_j = 0`` are harmless
(their rows of ``S K_uu S`` vanish and they contribute nothing).

Gradient with respect to ``theta`` (kernel hyperparameters, log-space) and the bias ``b``.
Let ``C = S B^-1 S`` (p x p), ``w = C m_u`` and ``g_i = C k_ui``. Since
``dB = S dK_uu S``, ``dC = -S B^-1 dB B^-1 S = -C dK_uu C``, hence::

    df_i  = dk_iu . w - g_i^T dK_uu w,
    dA_ii = dk_ii - 2 dk_iu . g_i + g_i^T dK_uu g_i.

With the likelihood's derivatives ``d1_i = d log Z_i / d mean`` and ``d2_i = d log Z_i / d var`` at
``N(f_i + b, A_ii)``, ``dNLP = sum_i a_i df_i + c_i dA_ii`` where ``a_i = -d1_i / |u^c|`` and
``c_i = -d2_i / |u^c|``; ``dNLP/db = sum_i a_i``. (For the probit, with
``z_i = y_i (f_i + b) / sqrt(1 + A_ii)`` and ``r_i = N(z_i) / Phi(z_i)``:
``d1_i = r_i y_i / sqrt(1 + A_ii)``, ``d2_i = -r_i z_i / (2 (1 + A_ii))``.) The ``dK_iu`` terms are
contracted chunk by chunk with the ``n_chunk x p`` weights ``a_i w^T - 2 c_i g_i^T``; the ``dK_uu``
terms with the ``p x p`` matrix ``-(sum_i a_i g_i) w^T + sum_i c_i g_i g_i^T``. For ``RBF`` and
``ConstantKernel * RBF`` the chunk's contraction never forms ``dK_iu``
(:mod:`skgpsparse.kernels._contraction`: one ``(n_chunk x p)(p x d)`` product). Each chunk of
non-basis rows costs one GEMM ``K C`` (``C`` formed once in O(p^3)), from which ``f_i = k_iu . w``
and ``A_ii = k_ii - k_iu . g_i``: :func:`nlp_sums`, which the rows on partitions
(:mod:`skgpsparse.latent.objectives._nlp_loss_partitioned`) run as well. Total cost
O(n p^2 + n p n_theta) time and O(n_chunk p n_theta + p^2 n_theta) memory.
"""

import numbers
import warnings

import numpy as np
from scipy.linalg import cho_solve, cholesky

from ...kernels import kernel_diag_gradient, kernel_gradient
from ...kernels._columns import iter_cross_kernel
from ...kernels._contraction import iter_kernel_contractions

__all__ = ["basis_system", "nlp_from_sums", "nlp_loss", "nlp_sums"]


def _check_inputs(X, y, bias, basis_indices, site_mean, site_precision):
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_samples, n_features), got {X.ndim}-D.")
    n = X.shape[0]
    y = np.asarray(y, dtype=np.float64)
    if y.shape != (n,):
        raise ValueError(f"y must have shape ({n},) to match X, got {y.shape}.")
    if not np.all(np.abs(y) == 1.0):
        raise ValueError(f"y must contain only -1 and +1, got values {np.unique(y)[:5]}.")
    if not isinstance(bias, numbers.Real) and np.ndim(bias) != 0:
        raise ValueError(f"bias must be a real scalar, got {bias!r}.")
    bias = float(bias)
    if not np.isfinite(bias):
        raise ValueError(f"bias must be finite, got {bias}.")
    basis = np.asarray(basis_indices)
    if basis.ndim != 1 or (basis.size and not np.issubdtype(basis.dtype, np.integer)):
        raise ValueError(
            "basis_indices must be a 1-D array of integer indices, got "
            f"shape {basis.shape} and dtype {basis.dtype}."
        )
    basis = basis.astype(np.intp)
    if basis.size and (basis.min() < 0 or basis.max() >= n):
        raise ValueError(
            f"basis_indices must lie in [0, {n}), got min {basis.min()} and max {basis.max()}."
        )
    if np.unique(basis).size != basis.size:
        raise ValueError("basis_indices must not contain duplicates.")
    p = basis.size
    if p >= n:
        raise ValueError(
            f"the NLP loss is taken over the points outside the basis, but all {n} points "
            f"are basis points (len(basis_indices)={p})."
        )
    site_mean = np.asarray(site_mean, dtype=np.float64)
    site_precision = np.asarray(site_precision, dtype=np.float64)
    for name, value in (("site_mean", site_mean), ("site_precision", site_precision)):
        if value.shape != (p,):
            raise ValueError(
                f"{name} must have shape ({p},) to match basis_indices, got {value.shape}."
            )
        if not np.all(np.isfinite(value)):
            raise ValueError(f"{name} must be finite.")
    if np.any(site_precision < 0):
        raise ValueError(f"site_precision must be non-negative, got min {site_precision.min()}.")
    return X, y, bias, basis, site_mean, site_precision


def basis_system(kernel, X_u, s, m_u, eval_gradient):
    """``(C, w, dK_uu)`` of the basis: ``C = S B^-1 S`` and ``w = C m_u``.

    ``B = I + S K_uu S = L L^T`` (validation paper sec. 2.5) with ``S = diag(s)``,
    ``s = Pi_u^1/2``. ``C`` is formed once (O(p^3); ``B >= I`` is well conditioned), so
    that ``g_i = C k_ui``, ``f_i = k_iu . w`` and ``A_ii = k_ii - k_iu . g_i`` take one
    GEMM per chunk of rows (``K C``) instead of two triangular solves against ``L``.
    ``dK_uu`` (``p x p x n_theta``) is computed with ``eval_gradient``, else ``None``.
    """
    p = s.size
    dK_uu = None
    if not p:
        K_uu, dK_uu = np.zeros((0, 0)), np.zeros((0, 0, kernel.n_dims))
    elif eval_gradient:
        # K_uu is the prior covariance of the basis latents, k(x, x) on its diagonal (a
        # WhiteKernel term is 0 in kernel(X, Z) but belongs on this diagonal, as in kernel(X))
        K_uu, dK_uu = kernel_gradient(kernel, X_u, X_u)
        diag_u, d_diag_u = kernel_diag_gradient(kernel, X_u)
        K_uu[np.diag_indices(p)] = diag_u
        dK_uu[np.arange(p), np.arange(p), :] = d_diag_u
    else:
        K_uu = kernel(X_u)
    if not p:
        return np.zeros((0, 0)), np.zeros(0), dK_uu
    L = cholesky(np.eye(p) + s[:, None] * K_uu * s[None, :], lower=True)
    C = s[:, None] * cho_solve((L, True), np.diag(s))
    C = 0.5 * (C + C.T)
    return C, C @ m_u, dK_uu


def nlp_loss(
    kernel,
    X,
    y,
    bias,
    basis_indices,
    site_mean,
    site_precision,
    *,
    likelihood,
    eval_gradient=False,
    chunk_size=None,
    weights=None,
):
    """NLP loss over the non-basis points, with fixed sites, and its gradient.

    Validation paper eq. (2.8) (additive-model paper eq. (4)): the mean of ``-log Z_i``, the
    log predictive probability of ``y_i`` under ``N(f_i + b, A_ii)``, over the points not in
    the basis, where ``f_i`` and ``A_ii`` are the ADF posterior mean and variance given the
    basis sites.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        Covariance function; the gradient is with respect to ``kernel.theta`` (log-space).
    X : array-like of shape (n_samples, n_features)
        Training inputs, basis points included.
    y : array-like of shape (n_samples,)
        Labels in {-1, +1}.
    bias : float
        Bias ``b`` added to the latent mean.
    basis_indices : array-like of int, shape (p,)
        Indices of the basis points in ``X``; distinct, fewer than ``n_samples``.
    site_mean : array-like of shape (p,)
        Site means ``m_u``, aligned with ``basis_indices``.
    site_precision : array-like of shape (p,)
        Site precisions ``p_u >= 0``, aligned with ``basis_indices``; zeros are allowed.
    likelihood : skgpsparse.likelihoods.Likelihood
        ``p(y | f + b)`` (the binary model's ``likelihood``).
    eval_gradient : bool, default=False
        Also return the gradient.
    chunk_size : int, default=None
        Rows of non-basis points per kernel block (see
        :func:`skgpsparse.kernels.iter_kernel_gradient`); the result does not depend on it.
    weights : array-like of shape (n_samples,), default=None
        The rows' weights (``sample_weight``): the loss is then the weighted mean of
        ``-log Z_i`` over the non-basis points (each row counted as that many copies).

    Returns
    -------
    loss : float
        The NLP loss (natural log).
    grad : ndarray of shape (n_theta + 1,)
        Only if ``eval_gradient``: derivatives with respect to ``kernel.theta`` followed by
        the derivative with respect to ``bias``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.latent.objectives._nlp_loss import nlp_loss
    >>> from skgpsparse.likelihoods import Probit
    >>> X = np.linspace(-2, 2, 9)[:, None]
    >>> y = np.where(X[:, 0] > 0, 1.0, -1.0)
    >>> loss, grad = nlp_loss(RBF(1.0), X, y, 0.0, [1, 7], [-1.0, 1.0], [2.0, 2.0],
    ...                       likelihood=Probit(), eval_gradient=True)
    >>> round(float(loss), 4), grad.shape
    (0.4659, (2,))
    """
    X, y, bias, basis, m_u, p_u = _check_inputs(
        X, y, bias, basis_indices, site_mean, site_precision
    )
    n = X.shape[0]
    rest = np.ones(n, dtype=bool)
    rest[basis] = False
    X_rest, y_rest = X[rest], y[rest]
    w_rest = None if weights is None else np.asarray(weights, dtype=float)[rest]
    n_rest = X_rest.shape[0] if w_rest is None else float(np.sum(w_rest))
    X_u = X[basis]
    s = np.sqrt(p_u)  # S = Pi_u^1/2 as a vector

    C, w, dK_uu = basis_system(kernel, X_u, s, m_u, eval_gradient)
    sums = nlp_sums(kernel, X_rest, y_rest, X_u, C, w, bias, n_rest, likelihood=likelihood,
                    eval_gradient=eval_gradient, chunk_size=chunk_size, weights=w_rest)
    return nlp_from_sums([sums], w, dK_uu, n_rest, eval_gradient=eval_gradient)


def nlp_sums(kernel, X_rest, y_rest, X_u, C, w, bias, n_rest, *, likelihood, eval_gradient,
             chunk_size=None, weights=None):
    """The loss's and the gradient's sums over the non-basis rows ``X_rest``, by chunks.

    The per-row part of :func:`nlp_loss`, for rows in memory or on one partition (the sums
    of several partitions add up; :func:`nlp_from_sums` finishes them). Each chunk costs one
    GEMM ``K C``, from which ``f_i = k_iu . w`` and ``A_ii = k_ii - k_iu . g_i``; the
    likelihood gives ``log Z_i`` and its derivatives ``d1_i``, ``d2_i`` in the mean and the
    variance of ``N(f_i + b, A_ii)``, so that ``a_i = -d1_i / |u^c|`` and
    ``c_i = -d2_i / |u^c|``. ``weights``: the rows' weights, each row's terms counted that
    many times (``n_rest`` is then their sum).

    Returns
    -------
    tuple
        ``(sum_i -log Z_i, min_i A_ii, max_i k_ii)`` and, with ``eval_gradient``, the
        contracted ``dK_iu`` terms, ``sum_i a_i g_i``, ``sum_i c_i g_i g_i^T``,
        ``sum_i a_i`` and ``sum_i c_i dk_ii``.
    """
    total, min_A = 0.0, np.inf
    if not eval_gradient:
        diag = kernel.diag(X_rest)
        for rows, K in iter_cross_kernel(kernel, X_rest, X_u, chunk_size=chunk_size):
            f = K @ w
            A = diag[rows] - np.einsum("ij,ij->i", K @ C, K)
            min_A = min(min_A, A.min(initial=np.inf))
            log_z = likelihood.log_predictive(y_rest[rows], f + bias, A, overwrite=True)
            total -= log_z.sum() if weights is None else log_z @ weights[rows]
        return total, min_A, float(np.max(diag, initial=0.0))

    p, n_theta = C.shape[0], kernel.n_dims
    diag, d_diag = kernel_diag_gradient(kernel, X_rest)
    grad_theta = np.zeros(n_theta)
    sum_a_g = np.zeros(p)  # sum_i a_i g_i
    Q_cc = np.zeros((p, p))  # sum_i c_i g_i g_i^T
    sum_a = 0.0
    sum_c_diag = np.zeros(n_theta)
    for rows, K, contract in iter_kernel_contractions(kernel, X_rest, X_u, chunk_size=chunk_size):
        G = K @ C  # rows g_i = C k_ui
        f = K @ w
        A = diag[rows] - np.einsum("ij,ij->i", G, K)
        min_A = min(min_A, A.min(initial=np.inf))
        log_z, d1, d2 = likelihood.tilted(y_rest[rows], f + bias, A)
        if weights is not None:  # a row's copies
            log_z, d1, d2 = (weights[rows] * v for v in (log_z, d1, d2))
        total -= log_z.sum()
        # dNLP = sum_i a_i df_i + c_i dA_ii  (eq. 2.8 differentiated)
        a = -d1 / n_rest
        c = -d2 / n_rest
        sum_a += a.sum()
        sum_c_diag += c @ d_diag[rows]
        # dK_iu terms: df_i gives dk_iu . w, dA_ii gives -2 dk_iu . g_i
        W = a[:, None] * w[None, :] - 2.0 * c[:, None] * G
        grad_theta += contract(W)  # sum_iu W_iu dk_iu, without the n x p x n_theta array
        sum_a_g += a @ G
        Q_cc += (G * c[:, None]).T @ G
    return (total, min_A, float(np.max(diag, initial=0.0)), grad_theta, sum_a_g, Q_cc, sum_a,
            sum_c_diag)


def nlp_from_sums(sums, w, dK_uu, n_rest, *, eval_gradient):
    """The loss (and gradient) from the :func:`nlp_sums` of each part of the rows, added in
    their order; warns when a posterior variance was clipped."""
    total = sum(r[0] for r in sums)
    _warn_clipped(min(r[1] for r in sums), max(r[2] for r in sums))
    if not eval_gradient:
        return total / n_rest
    grad_theta = sum(r[3] for r in sums)
    sum_a_g, Q_cc = sum(r[4] for r in sums), sum(r[5] for r in sums)
    sum_a, sum_c_diag = sum(r[6] for r in sums), sum(r[7] for r in sums)
    # dK_uu terms: df_i gives -g_i^T dK_uu w, dA_ii gives g_i^T dK_uu g_i
    Q = Q_cc - np.outer(sum_a_g, w)
    grad_theta = grad_theta + (np.einsum("jk,jkt->t", Q, dK_uu) + sum_c_diag)
    return total / n_rest, np.append(grad_theta, sum_a)


def _warn_clipped(min_A, max_diag):
    """Warn when a posterior variance was materially negative before clipping at 0."""
    if min_A < -1e-6 * max(1.0, max_diag):
        warnings.warn(
            f"Negative posterior variance A_ii = {min_A:.3g} was clipped to 0 in the NLP "
            "loss; the basis covariance is ill-conditioned (consider a larger length scale "
            "or fewer basis vectors).",
            RuntimeWarning,
            stacklevel=4,
        )
