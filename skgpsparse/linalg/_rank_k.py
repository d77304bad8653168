"""Rank-k Cholesky update and downdate by (hyperbolic) Householder reflections, row by row.

Re-exported by :mod:`skgpsparse.linalg` beside the rank-one, append and delete routines.
"""

import math

import numpy as np
from scipy.linalg import solve_triangular

from ._storage import _active, _work_copy


def _rank_k(L, V, size, overwrite_L, sign, name):
    """Shared code of :func:`cholesky_update_rank_k` (sign=+1) and the downdate (sign=-1)."""
    L, p = _active(L, size)
    V = np.asarray(V)
    if V.ndim == 1:
        V = V[:, None]
    if V.ndim != 2 or V.shape[0] != p:
        raise ValueError(f"`V` must have shape ({p}, k) (the factor's size), got {V.shape}.")
    W = L if overwrite_L else _work_copy(L, p)
    if p == 0 or V.shape[1] == 0:
        return W[:p, :p]
    # Column c of V takes part from its first non-zero row on: sorted by that row, the columns
    # active at row j are a prefix (a diagonal change costs O((p - j0)^2 k)). Z = [l, V]: its
    # column 0 holds L[:, j] while row j is processed (L's column j changes only then).
    nonzero = V != 0
    first = np.where(nonzero.any(axis=0), nonzero.argmax(axis=0), p)
    perm = np.argsort(first, kind="stable")
    first = first[perm][first[perm] < p]
    if len(first) == 0:
        return W[:p, :p]
    Z = np.zeros((p, 1 + len(first)), dtype=W.dtype)
    Z[:, 1:] = V[:, perm[: len(first)]]
    n_active = (np.searchsorted(first, np.arange(p), side="right") + 1).tolist()
    j0 = int(first[0])
    if p - j0 >= 6 * _BLOCK and len(first) >= _BLOCK:
        _rank_k_blocked(W, Z, n_active, j0, p, sign, name)
    else:
        _rank_k_rows(W, Z, n_active, j0, p, sign, name)
    return W[:p, :p]


# Rows per panel of the blocked rank-k loop, used from 6 panels and 32 columns of V on.
_BLOCK = 32


def _reflection(ljj, vv, sign, j, name):
    """``r`` and ``u0`` of the reflection of row ``[l_jj, v]`` (``vv = |v|^2``) onto ``[r, 0]``.

    One (hyperbolic for sign < 0) Householder reflection ``T = I - (2/s) J u u^T`` with ``J =
    diag(1, sign I)``, so ``T J T^T = J`` and ``[L V] J [L V]^T`` is kept (Golub & Van Loan
    §6.5.4): ``r^2 = l_jj^2 + sign |v|^2``, ``u = [u0, v]``, ``u0 = l_jj - r`` and ``s = u^T J u
    = -2 r u0``, so that ``B T = B + c (B J u) u^T`` with ``c = 1 / (r u0)``.
    """
    r2 = ljj * ljj + sign * vv
    if not 0.0 < r2 < np.inf:
        what = "A - V V^T" if sign < 0 else "A + V V^T (L is singular or not finite)"
        raise np.linalg.LinAlgError(
            f"{name}: {what} is not positive definite (pivot {j} would be {r2:.3g} <= 0)."
            + (" The downdate removes more than the matrix holds." if sign < 0 else "")
        )
    r = np.sqrt(r2)
    return r, -sign * vv / (ljj + r)  # u0 = l_jj - r without cancellation


def _flip_negative_pivots(W, j0, j1, p):
    """``-L[:, j]`` is as good a factor column as ``L[:, j]``: make pivots ``j0..j1-1`` >= 0."""
    for j in np.flatnonzero(np.diagonal(W)[j0:j1] < 0) + j0:
        W[j:p, j] *= -1.0


def _rank_k_rows(W, Z, n_active, j0, p, sign, name):
    """One reflection per row ``j``, applied to the rows below by a matvec and an outer product."""
    _flip_negative_pivots(W, j0, p, p)
    for j in range(j0, p):
        u = Z[j, : n_active[j]]
        v = u[1:]
        ljj = float(W[j, j])
        vv = float(np.dot(v, v))
        if not 0.0 < ljj * ljj + sign * vv < np.inf or not vv:
            r, u0 = _reflection(ljj, vv, sign, j, name)  # raises if not positive definite
        else:
            r = math.sqrt(ljj * ljj + sign * vv)
            u0 = -sign * vv / (ljj + r)  # as in _reflection
        if u0 != 0.0 and j + 1 < p:  # (u0 = 0: v = 0 here, or below round-off of l_jj)
            B = Z[j + 1 :, : len(u)]
            B[:, 0] = W[j + 1 : p, j]
            # B J u with J = diag(1, sign I): B u, or -(B [-u0, v]) for the downdate
            u[0] = sign * u0
            w = B @ u
            w *= sign / (r * u0)
            u[0] = u0
            B += np.multiply.outer(w, u)  # B <- B T = B + c (B J u) u^T
            W[j + 1 : p, j] = B[:, 0]
        W[j, j] = r


def _rank_k_blocked(W, Z, n_active, j0, p, sign, name):
    """The same reflections, a panel of ``_BLOCK`` rows at a time: within the panel row by row,
    then all of them at once on the rows below, in the compact form ``T_1 ... T_q = I + J Y C
    Y^T`` (Schreiber & Van Loan's WY form; ``C^-1 = diag(r_i u0_i) - triu(Y^T J Y, 1)``) with
    matrix products: O(p^2 k) flops, most of them in BLAS-3."""
    U = Z[:, 1:]
    while j0 < p:
        j1 = min(j0 + _BLOCK, p)
        q, a = j1 - j0, n_active[j1 - 1] - 1
        _flip_negative_pivots(W, j0, j1, p)
        X = np.zeros((q, q + a), dtype=W.dtype)  # the panel's rows [L, V]
        X[:, :q] = np.tril(W[j0:j1, j0:j1])
        X[:, q:] = U[j0:j1, :a]
        Y = np.zeros((q + a, q), dtype=W.dtype)  # the reflections' u, one column each
        c_inv = np.zeros(q)
        for i in range(q):
            ai = n_active[j0 + i] - 1
            v = X[i, q : q + ai]
            r, u0 = _reflection(float(X[i, i]), float(np.dot(v, v)), sign, j0 + i, name)
            X[i, i] = r
            if u0 == 0.0:
                continue
            Y[i, i], Y[q : q + ai, i], c_inv[i] = u0, v, r * u0
            if i + 1 < q:
                B = X[i + 1 :]
                Bv = B[:, q : q + ai]
                w = Bv @ v
                w *= sign / (r * u0)
                w += B[:, i] * (1.0 / r)
                B[:, i] += w * u0
                Bv += np.multiply.outer(w, v)
        il = np.tril_indices(q)
        W[j0:j1, j0:j1][il] = X[:, :q][il]
        if j1 < p:
            keep = c_inv != 0.0
            Y = Y[:, keep]
            JY = Y.copy()
            JY[q:] *= sign
            C_inv = -np.triu(Y.T @ JY, 1)
            C_inv[np.diag_indices_from(C_inv)] = c_inv[keep]
            C = solve_triangular(C_inv, np.eye(len(C_inv)), check_finite=False)
            Lt, Ut = W[j1:p, j0:j1], U[j1:p, :a]
            # rows below the panel: [Lt, Ut] <- [Lt, Ut] + ([Lt, Ut] J Y) C Y^T
            Q = (Lt @ JY[:q] + Ut @ JY[q:]) @ C
            Lt += Q @ Y[:q].T
            Ut += Q @ Y[q:].T
        j0 = j1


def cholesky_update_rank_k(L, V, *, size=None, overwrite_L=False):
    """Factor of ``A + V V^T`` given the lower factor ``L L^T = A``, for ``V`` of shape (p, k).

    One Householder reflection per column ``j`` maps the row ``[L_jj, V_j,:]`` onto
    ``[r, 0]`` and is applied to the rows below by a matrix-vector and an outer product: ``p``
    vectorised steps and O(p^2 k) flops, not ``k`` rank-one updates of ``p`` steps each (Golub &
    Van Loan §6.5.4). Columns of ``V`` take part from their first non-zero row on, so a change
    of the trailing block only (e.g. of diagonal entries ``j >= j0``, ``V = E diag(sqrt(d))``)
    costs O((p - j0)^2 k).

    Parameters
    ----------
    L : ndarray of shape (p, p) or (p_max, p_max)
        Lower Cholesky factor; only the lower triangle is read and written.
    V : array-like of shape (p, k) or (p,)
        The update's columns (a vector is one column). Not modified.
    size : int, default=None
        Active size of a preallocated storage ``L``; ``None`` means ``L.shape[0]``.
    overwrite_L : bool, default=False
        Work in place on ``L`` (result in its leading block).

    Returns
    -------
    L_new : ndarray of shape (p, p)
        Lower Cholesky factor (positive diagonal) of ``A + V V^T``.

    Raises
    ------
    numpy.linalg.LinAlgError
        If a diagonal entry of ``L`` at or below the first non-zero row of ``V`` is zero (or not
        finite) and ``V`` does not fill it: ``A + V V^T`` is singular.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.linalg import cholesky_update_rank_k
    >>> A = np.array([[4.0, 2.0, 1.0], [2.0, 3.0, 0.5], [1.0, 0.5, 2.0]])
    >>> V = np.array([[1.0, 0.0], [-1.0, 2.0], [0.5, 1.0]])
    >>> np.allclose(cholesky_update_rank_k(np.linalg.cholesky(A), V),
    ...             np.linalg.cholesky(A + V @ V.T))
    True
    """
    return _rank_k(L, V, size, overwrite_L, +1.0, "cholesky_update_rank_k")


def cholesky_downdate_rank_k(L, V, *, size=None, overwrite_L=False):
    """Factor of ``A - V V^T`` given the lower factor ``L L^T = A``, for ``V`` of shape (p, k).

    As :func:`cholesky_update_rank_k` with one hyperbolic Householder reflection per column
    (``T J T^T = J`` for ``J = diag(1, -I_k)``): ``p`` vectorised steps, O(p^2 k) flops.

    Parameters
    ----------
    L, V, size
        As :func:`cholesky_update_rank_k`'s (``V`` the downdate's columns).
    overwrite_L : bool, default=False
        Work in place on ``L``. If the downdate fails, an overwritten ``L`` is left partly
        modified.

    Returns
    -------
    L_new : ndarray of shape (p, p)
        Lower Cholesky factor (positive diagonal) of ``A - V V^T``.

    Raises
    ------
    numpy.linalg.LinAlgError
        If ``A - V V^T`` is not (numerically) positive definite.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.linalg import cholesky_downdate_rank_k
    >>> A = np.array([[4.0, 2.0, 1.0], [2.0, 3.0, 0.5], [1.0, 0.5, 2.0]])
    >>> V = np.array([[1.0, 0.0], [0.5, 0.5], [0.0, 0.5]])
    >>> np.allclose(cholesky_downdate_rank_k(np.linalg.cholesky(A), V),
    ...             np.linalg.cholesky(A - V @ V.T))
    True
    """
    return _rank_k(L, V, size, overwrite_L, -1.0, "cholesky_downdate_rank_k")
