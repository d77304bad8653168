"""The validation NLP loss (eq. (2.8)) and its gradient as sums over row partitions.

The same loss as :func:`~._nlp_loss.nlp_loss` for rows held in the partitions of a
:class:`~skgpsparse.rows._store.RowStore`: the driver forms the ``p x p`` quantities of the basis
(``C = S B^-1 S``, ``w = C m_u``, ``dK_uu``), every partition runs the chunk loop of
``nlp_loss`` over its non-basis rows and returns its sums (the loss; with the gradient its
``sum_i a_i``, ``sum_i a_i g_i``, ``sum_i c_i g_i g_i^T``, the contracted ``dK_iu`` terms
and ``sum_i c_i dk_ii``), and the driver adds them: ``O(p^2 + n_theta)`` numbers each way.
"""

import numpy as np

from ..kernels import kernel_diag_gradient
from ..kernels._columns import iter_cross_kernel
from ..kernels._contraction import iter_kernel_contractions
from ..rows._store import read_only
from ._nlp_loss import _probit_terms, _warn_clipped, basis_system

__all__ = ["partitioned_nlp_loss"]


@read_only
def _n_nlp(part, kernel, positive, basis, X_u, C, w, bias, n_rest, eval_gradient):
    rest = np.ones(part.n, dtype=bool)
    local = basis[(basis >= part.offset) & (basis < part.offset + part.n)] - part.offset
    rest[local] = False
    X_rest = np.asarray(part.X[rest], dtype=np.float64)
    y_rest = np.where(part.y[rest] == positive, 1.0, -1.0)
    p = X_u.shape[0]
    total, min_A = 0.0, np.inf
    if not eval_gradient:
        diag = kernel.diag(X_rest)
        for rows, K in iter_cross_kernel(kernel, X_rest, X_u):
            f = K @ w
            A = diag[rows] - np.einsum("ij,ij->i", K @ C, K)
            min_A = min(min_A, A.min(initial=np.inf))
            total += _probit_terms(y_rest[rows], f, A, bias)[1].sum()
        return total, min_A, float(np.max(diag, initial=0.0))
    n_theta = kernel.n_dims
    diag, d_diag = kernel_diag_gradient(kernel, X_rest)
    grad_theta, sum_a_g, Q_cc = np.zeros(n_theta), np.zeros(p), np.zeros((p, p))
    sum_a, sum_c_diag = 0.0, np.zeros(n_theta)
    for rows, K, contract in iter_kernel_contractions(kernel, X_rest, X_u):
        G = K @ C
        f = K @ w
        A = diag[rows] - np.einsum("ij,ij->i", G, K)
        min_A = min(min_A, A.min(initial=np.inf))
        yc = y_rest[rows]
        z, nlog_phi, ratio, one_plus_A, sd = _probit_terms(yc, f, A, bias)
        total += nlog_phi.sum()
        a = -ratio * yc / (sd * n_rest)
        c = ratio * z / (2.0 * one_plus_A * n_rest)
        sum_a += a.sum()
        sum_c_diag += c @ d_diag[rows]
        W = a[:, None] * w[None, :] - 2.0 * c[:, None] * G
        grad_theta += contract(W)
        sum_a_g += a @ G
        Q_cc += (G * c[:, None]).T @ G
    return (total, min_A, float(np.max(diag, initial=0.0)), grad_theta, sum_a_g, Q_cc, sum_a,
            sum_c_diag)


def partitioned_nlp_loss(kernel, rows, positive, bias, basis_indices, site_mean,
                         site_precision, *, eval_gradient=False):
    """NLP eq. (2.8) over the non-basis rows of ``rows`` (class ``positive`` against the rest).

    As :func:`~._nlp_loss.nlp_loss` (same value and gradient, up to the order of the sums),
    with the rows in the partitions of the row store ``rows``.
    """
    basis = np.asarray(basis_indices, dtype=np.intp)
    m_u = np.asarray(site_mean, dtype=np.float64)
    p_u = np.asarray(site_precision, dtype=np.float64)
    bias = float(bias)
    p = basis.size
    n_rest = rows.n - p
    X_u = np.asarray(rows.take(basis)[0], dtype=np.float64)
    C, w, dK_uu = basis_system(kernel, X_u, np.sqrt(p_u), m_u, eval_gradient)
    results = rows.map(_n_nlp, kernel, positive, basis, X_u, C, w, bias, n_rest, eval_gradient)
    total = sum(r[0] for r in results)
    _warn_clipped(min(r[1] for r in results), np.array([max(r[2] for r in results)]))
    if not eval_gradient:
        return total / n_rest
    grad_theta = sum(r[3] for r in results)
    sum_a_g, Q_cc = sum(r[4] for r in results), sum(r[5] for r in results)
    sum_a, sum_c_diag = sum(r[6] for r in results), sum(r[7] for r in results)
    Q = Q_cc - np.outer(sum_a_g, w)
    grad_theta = grad_theta + np.einsum("jk,jkt->t", Q, dK_uu) + sum_c_diag
    return total / n_rest, np.append(grad_theta, sum_a)
