"""Tipping & Faul's add test: which inactive basis functions raise the RVM regression evidence.

SSEM paper eq. (13) lets a basis function enter at ``alpha = L`` and never returns to one whose
``alpha`` reached ``L``. The paper's reference [9] (Tipping & Faul, *Fast marginal likelihood
maximisation for sparse Bayesian models*, AISTATS 2003) gives the marginal likelihood (eq. 11)
as a function of one ``alpha_i`` with the others fixed. With ``C = s2 I + Phi A^-1 Phi^T`` the
covariance of eq. (11) over the active basis functions and, for an inactive ``phi_i``,

    s_i = phi_i^T C^-1 phi_i,        q_i = phi_i^T C^-1 t,

adding ``phi_i`` with precision ``alpha_i`` changes the log likelihood by

    l(alpha_i) = 1/2 [log alpha_i - log(alpha_i + s_i) + q_i^2 / (alpha_i + s_i)],

which is maximal at ``alpha_i = s_i^2 / (q_i^2 - s_i)`` when ``q_i^2 > s_i`` (else at
``alpha_i = inf``: leave ``phi_i`` out), with the gain

    l_max = 1/2 [(q_i^2 - s_i) / s_i + log(s_i / q_i^2)] > 0.

By Woodbury's identity with the factor ``L L^T = Sigma^-1 = A + Phi^T Phi / s2`` (eq. 7) and
``mu = Sigma Phi^T t / s2`` (eq. 6) both cost one triangular solve per candidate:

    s_i = phi_i^T phi_i / s2 - |z_i|^2,   z_i = L^-1 Phi^T phi_i / s2,
    q_i = phi_i^T (t - Phi mu) / s2.

- :func:`add_statistics` computes ``s``, ``q`` and the cross terms ``P_ij = phi_i^T C^-1
  phi_j`` of a few candidates, O(n M k + M^2 k + n k^2) for ``k`` of them.
- :func:`sequential_adds` adds candidates one at a time, each at its optimal ``alpha``, the
  best gain first; after adding ``j`` the others' statistics follow from ``C^-1`` losing
  ``C^-1 phi_j phi_j^T C^-1 / (alpha_j + s_j)``. Each add raises the log likelihood by its
  gain, so the sequence never lowers it.
"""

import numpy as np
from scipy.linalg import solve_triangular

__all__ = ["add_gain", "add_statistics", "sequential_adds"]

# A candidate whose s_i is below this fraction of phi_i^T phi_i / s2 lies in the active span
# up to round-off (s_i is then a cancellation): it is left out. (At 1e-10 the near-collinear
# Gaussians of the Mackey-Glass benchmark at s2 ~ 1e-5 lost useful candidates.)
SPAN_RTOL = 1e-13


def add_statistics(L, active_rows, resid, s2, rows, cross=True, solve=None):
    """``s``, ``q`` (Tipping & Faul) and the cross terms ``P`` of candidate ``rows``.

    Parameters
    ----------
    L : ndarray of shape (M, M)
        Lower factor of ``Sigma^-1 = A + Phi^T Phi / s2`` over the active basis functions.
    active_rows : ndarray of shape (M, n)
        Their design rows ``phi_j(X)``.
    resid : ndarray of shape (n,)
        ``t - Phi mu`` (eq. 6).
    s2 : float
        Noise variance.
    rows : ndarray of shape (k, n)
        Design rows of the candidates.
    cross : bool, default=True
        Compute ``P`` (O(M k^2 + n k^2)); else ``P`` is ``None``.
    solve : callable, optional
        ``B -> L^-1 B`` (default :func:`scipy.linalg.solve_triangular`).

    Returns
    -------
    s, q : ndarray of shape (k,)
        ``phi_i^T C^-1 phi_i`` and ``phi_i^T C^-1 t``; ``s_i = 0`` where the candidate lies in
        the active span up to round-off.
    P : ndarray of shape (k, k) or None
        ``phi_i^T C^-1 phi_j`` (``diag(P) = s`` off the span).

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.rvm._add_test import add_statistics
    >>> rows = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 1.0]])
    >>> s, q, P = add_statistics(np.empty((0, 0)), np.empty((0, 3)), np.ones(3), 0.5, rows)
    >>> s, q  # C = s2 I: s = |phi|^2 / s2, q = phi^T t / s2
    (array([4., 4.]), array([4., 4.]))
    """
    if rows.shape[0] == 1 and L.shape[0]:  # one candidate (most SSEM visits): 1-d products
        r = rows[0]
        b = active_rows @ r / s2
        z = solve_triangular(L, b, lower=True, check_finite=False) if solve is None else solve(b)
        norm = (r @ r) / s2
        s = norm - z @ z  # the formulas below
        s = 0.0 if s <= SPAN_RTOL * norm else s
        return np.array([s]), np.array([(r @ resid) / s2]), np.array([[s]]) if cross else None
    # C^-1 = I / s2 - Phi Sigma Phi^T / s2^2 (Woodbury, Sigma = L^-T L^-1 of eq. 7), so
    # phi_i^T C^-1 phi_j = phi_i^T phi_j / s2 - z_i^T z_j with z_i = L^-1 Phi^T phi_i / s2
    norm = np.einsum("ij,ij->i", rows, rows) / s2
    s, P = norm.copy(), (rows @ rows.T / s2 if cross else None)
    if L.shape[0]:
        B = active_rows @ rows.T / s2
        if solve is None:
            Z = solve_triangular(L, B, lower=True, check_finite=False)
        else:
            Z = solve(B)
        s -= np.einsum("ij,ij->j", Z, Z)
        if cross:
            P -= Z.T @ Z
    # q_i = phi_i^T C^-1 t = phi_i^T (t - Phi mu) / s2 since mu = Sigma Phi^T t / s2 (eq. 6)
    q = rows @ resid / s2
    s[s <= SPAN_RTOL * norm] = 0.0
    return s, q, P


def add_gain(s, q):
    """Gain ``1/2 [(q^2 - s) / s + log(s / q^2)]`` of adding each candidate at its optimum
    ``alpha = s^2 / (q^2 - s)``, and that ``alpha``; gain 0 and ``alpha = inf`` where
    ``q^2 <= s`` (or ``s = 0``: in the active span).

    The M-step's floor (``ALPHA_FLOOR`` times the data precision) is not applied: on the
    Mackey-Glass benchmark an added ``alpha`` raised to it lost most of the add test's gain
    in likelihood and test error (at N = 1600 and 2400, partition 0).

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.rvm._add_test import add_gain
    >>> gain, alpha = add_gain(np.array([1.0, 4.0]), np.array([2.0, 1.0]))
    >>> np.round(gain, 4), alpha
    (array([0.8069, 0.    ]), array([0.33333333,        inf]))
    """
    s, q = np.asarray(s, dtype=float), np.asarray(q, dtype=float)
    q2 = q * q
    ok = (s > 0) & (q2 > s)
    gain, alpha = np.zeros_like(s), np.full_like(s, np.inf)
    gain[ok] = 0.5 * ((q2[ok] - s[ok]) / s[ok] + np.log(s[ok] / q2[ok]))
    alpha[ok] = s[ok] ** 2 / (q2[ok] - s[ok])
    return gain, alpha


def sequential_adds(s, q, P, min_gain=0.0, norm=None):
    """Add candidates one at a time at their optimal ``alpha``, the largest gain first.

    After adding ``j`` with ``alpha_j``, ``C`` gains ``phi_j phi_j^T / alpha_j``, so
    ``C^-1`` loses ``C^-1 phi_j phi_j^T C^-1 / (alpha_j + s_j)`` (Sherman-Morrison) and
    ``s_i -= P_ij^2 / (alpha_j + s_j)``, ``q_i -= P_ij q_j / (alpha_j + s_j)``, ``P_ik -= P_ij
    P_jk / (alpha_j + s_j)``. It stops when no remaining gain exceeds ``min_gain``.

    Parameters
    ----------
    s, q : ndarray of shape (k,)
        Statistics of the candidates against the model before the adds.
    P : ndarray of shape (k, k)
        Their cross terms ``phi_i^T C^-1 phi_j``.
    min_gain : float, default=0.0
        Smallest log-likelihood gain worth an add.
    norm : ndarray of shape (k,), optional
        ``phi_i^T phi_i / s2``: a candidate whose ``s_i`` falls below ``SPAN_RTOL`` times it
        (in the span of the added ones up to round-off) is left out.

    Returns
    -------
    picks : ndarray of int
        Candidates to add, in this order.
    alpha : ndarray
        Their precisions (each optimal given the ones added before it).
    gain : float
        Total log-likelihood gain.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.rvm._add_test import sequential_adds
    >>> P = np.array([[1.0, 0.9], [0.9, 1.0]])  # two nearly parallel candidates
    >>> picks, alpha, gain = sequential_adds(np.diag(P), np.array([3.0, 2.9]), P)
    >>> picks  # the second one explains little once the first is in
    array([0])
    """
    s, q, P = np.array(s, dtype=float), np.array(q, dtype=float), np.array(P, dtype=float)
    floor = np.zeros(len(s)) if norm is None else SPAN_RTOL * np.asarray(norm)
    if len(s) == 1:  # one candidate (most SSEM visits): the same formulas on scalars
        s0, q2 = float(s[0]), float(q[0]) ** 2
        if s0 <= floor[0] or q2 <= s0:
            return np.empty(0, dtype=np.intp), np.empty(0), 0.0
        gain = 0.5 * ((q2 - s0) / s0 + np.log(s0 / q2))
        if gain <= min_gain:
            return np.empty(0, dtype=np.intp), np.empty(0), 0.0
        return np.zeros(1, dtype=np.intp), np.array([s0 * s0 / (q2 - s0)]), gain
    free = np.ones(len(s), dtype=bool)
    picks, alphas, total = [], [], 0.0
    while free.any():
        gain, alpha = add_gain(np.where(s > floor, s, 0.0), q)
        gain[~free] = 0.0
        j = int(np.argmax(gain))
        if gain[j] <= min_gain:
            break
        picks.append(j)
        alphas.append(alpha[j])
        total += gain[j]
        free[j] = False
        # Sherman-Morrison: C^-1 <- C^-1 - C^-1 phi_j phi_j^T C^-1 / (alpha_j + s_j)
        c = P[:, j] / (alpha[j] + s[j])
        q -= c * q[j]
        P -= np.outer(c, P[j])
        s = np.diag(P).copy()
        s[~free] = 0.0
    return np.asarray(picks, dtype=np.intp), np.asarray(alphas), total
