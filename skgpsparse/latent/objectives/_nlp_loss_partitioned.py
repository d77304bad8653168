"""The validation NLP loss (eq. (2.8)) and its gradient as sums over row partitions.

The same loss as :func:`~skgpsparse.latent.objectives._nlp_loss.nlp_loss` for rows held in
the partitions of a :class:`~skgpsparse.rows._store.RowStore`: the driver forms the ``p x p``
quantities of the basis (``C = S B^-1 S``, ``w = C m_u``, ``dK_uu``), every partition runs
:func:`~skgpsparse.latent.objectives._nlp_loss.nlp_sums` over its non-basis rows and
returns its sums (the loss; with the gradient its ``sum_i a_i``, ``sum_i a_i g_i``,
``sum_i c_i g_i g_i^T``, the contracted ``dK_iu`` terms and ``sum_i c_i dk_ii``), and the driver
adds them (:func:`~skgpsparse.latent.objectives._nlp_loss.nlp_from_sums`):
``O(p^2 + n_theta)`` numbers each way.
"""

import numpy as np

from ...rows._store import read_only
from ._nlp_loss import basis_system, nlp_from_sums, nlp_sums

__all__ = ["partitioned_nlp_loss"]


@read_only
def _n_nlp(part, kernel, positive, basis, X_u, C, w, bias, n_rest, likelihood, eval_gradient):
    rest = np.ones(part.n, dtype=bool)
    local = basis[(basis >= part.offset) & (basis < part.offset + part.n)] - part.offset
    rest[local] = False
    X_rest = np.asarray(part.X[rest], dtype=np.float64)
    y_rest = np.where(part.y[rest] == positive, 1.0, -1.0)
    return nlp_sums(kernel, X_rest, y_rest, X_u, C, w, bias, n_rest, likelihood=likelihood,
                    eval_gradient=eval_gradient)


def partitioned_nlp_loss(kernel, rows, positive, bias, basis_indices, site_mean,
                         site_precision, *, likelihood, eval_gradient=False):
    """NLP eq. (2.8) over the non-basis rows of ``rows`` (class ``positive`` against the rest).

    As :func:`~skgpsparse.latent.objectives._nlp_loss.nlp_loss` (same value and gradient,
    up to the order of the sums), with the rows in the partitions of the row store ``rows``.
    """
    basis = np.asarray(basis_indices, dtype=np.intp)
    m_u = np.asarray(site_mean, dtype=np.float64)
    p_u = np.asarray(site_precision, dtype=np.float64)
    bias = float(bias)
    n_rest = rows.n - basis.size
    X_u = np.asarray(rows.take(basis)[0], dtype=np.float64)
    C, w, dK_uu = basis_system(kernel, X_u, np.sqrt(p_u), m_u, eval_gradient)
    sums = rows.map(_n_nlp, kernel, positive, basis, X_u, C, w, bias, n_rest, likelihood,
                    eval_gradient)
    return nlp_from_sums(sums, w, dK_uu, n_rest, eval_gradient=eval_gradient)
