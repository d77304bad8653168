"""The relevance vector machines' basis functions: the candidates and their rows ``phi_j(X)``.

The SSEM paper's extended linear model (eq. 1) has one basis function ``phi_j(x) = k(x, x_j)``
per candidate training input and, with a bias, a constant one (eq. 4). Both RVMs draw the
candidates alike (:func:`candidate_basis`) and evaluate the active ones by rows
(:func:`basis_rows`).
"""

from typing import NamedTuple

import numpy as np

from ..kernels import iter_kernel

__all__ = ["CandidateBasis", "basis_rows", "candidate_basis"]


class CandidateBasis(NamedTuple):
    """The candidate basis functions of a fit on ``n`` rows (index ``n`` is the bias)."""

    centers: np.ndarray  # (n + 1, d): the training inputs, then a row for the bias
    bias_mask: np.ndarray  # (n + 1,) bool: True at the bias only
    library: np.ndarray  # indices of the candidates SSEM visits (the bias last)
    first: np.ndarray  # [n]: the bias, visited first; None without a bias


def candidate_basis(X, n_basis_functions, bias, rng):
    """The candidates: every row of ``X`` (or ``n_basis_functions`` of them drawn by ``rng``,
    sorted) and, with ``bias``, the constant basis function, which SSEM visits first."""
    n = X.shape[0]
    centers = np.vstack([X, np.zeros((1, X.shape[1]))])
    bias_mask = np.zeros(n + 1, dtype=bool)
    bias_mask[n] = True
    library = np.arange(n)
    if n_basis_functions is not None and n_basis_functions < n:
        library = np.sort(rng.choice(n, n_basis_functions, replace=False))
    first = np.array([n]) if bias else None
    if bias:
        library = np.append(library, n)
    return CandidateBasis(centers, bias_mask, library, first)


def basis_rows(kernel, X, centers, bias_mask, *, chunk_size=None):
    """Rows ``phi_j(X)`` of the basis functions ``j``: ``k(X, c_j)`` or ones for the bias.

    Parameters
    ----------
    kernel : Kernel
        The (fixed) kernel that shapes the basis functions.
    X : ndarray of shape (n, d)
        Where the basis functions are evaluated.
    centers : ndarray of shape (m, d)
        Centres ``c_j`` (rows for the bias are ignored).
    bias_mask : ndarray of bool, shape (m,)
        Which rows are the constant basis function.

    Returns
    -------
    rows : ndarray of shape (m, n)
        ``rows[j, i] = phi_j(x_i)``.
    """
    m = centers.shape[0]
    rows = np.ones((m, X.shape[0]))
    kern = np.flatnonzero(~bias_mask)
    if kern.size:
        for sl, K in iter_kernel(kernel, centers[kern], X, chunk_size=chunk_size):
            rows[kern[sl]] = K
    return rows
