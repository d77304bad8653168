"""The regressor's posterior as ``p x p`` statistics of the rows: what ``partial_fit`` updates.

With the basis ``X_u``, the kernel and the noise variance ``s2`` fixed, the projected-process
posterior (GPML eqs. (8.26)-(8.27)) depends on the rows only through ``K_uf K_fu`` and
``K_uf y``; in the coordinates of ``L`` (``L L^T = K_uu + j I``, ``V = L^-1 K_uf``, as in
:mod:`._state`) through ``V V^T`` (``p x p``) and ``V y`` (``p`` per target). New rows add
``V_b V_b^T`` and ``V_b y_b`` (``V_b = L^-1 K_ub``) and can then be forgotten: the posterior
after any number of batches is the one of a fit on all of them with this basis, kernel and
noise, and the statistics do not grow with the rows.

Two inverses are kept, each updated by the Woodbury identity in O(p^2 k + k^3) for ``k`` new
rows (O(p^2) for one):

- ``P_j = (V V^T + s2 I)^-1``, the state's model (the jitter ``j`` in ``K_uu``), from which
  the hyperparameter objective (``|beta|^2 = Vy^T P_j Vy`` and ``log|V V^T + s2 I|`` by the
  matrix determinant lemma) and the growth scores are read;
- ``P = A'^-1``, ``A' = V V^T + s2 M``, ``M = I - (j - delta) L^-1 L^-T``, the prediction's
  model with its minimal jitter ``delta`` (:mod:`._prediction`), giving the mean weights
  ``alpha = L^-T P V y`` and the variance matrix ``S = M^-1 - s2 P``, whose update is
  ``+ s2`` times ``P``'s downdate.

A batch of more than a quarter of ``p`` rows, and every ``32 p`` rows added by Woodbury
updates (which bounds their rounding), go through :meth:`StreamingPosterior.refresh`
instead: one Cholesky factor of ``V V^T + s2 I`` and the fit's own
:func:`~._prediction.prediction_factors`, O(p^3), so a model streamed in batches predicts
as the fit's code does from the same statistics.

A new basis vector (:meth:`StreamingPosterior.border`, see :mod:`._streaming` for what the
forgotten rows contribute to it) borders ``L``, ``V V^T`` and ``V y`` and both inverses and
``S`` by block inversion, O(p^2); a refresh follows only when a new pivot is at the level of
rounding.

The objective (DTC, GPML eq. (8.17), or the VFE bound, Titsias 2009 eq. (9)) is tracked as
its part that depends only on the rows (``-|y|^2 / (2 s2) - m n/2 log(2 pi s2)`` and VFE's
``-m tr(K_ff - Q_ff) / (2 s2)``, sums over the batches) plus
``|beta|^2 / (2 s2) + m p/2 log s2 - m/2 log|V V^T + s2 I|`` from the statistics.
"""

from typing import NamedTuple

import numpy as np
from scipy.linalg import cholesky
from scipy.linalg.blas import dgemm

from ..linalg import solve_lower
from ._exact import _inverse_from_factor
from ._prediction import PredictionFactors, prediction_factors

__all__ = ["FitStatistics", "StreamingPosterior"]

_LOG_2PI = np.log(2.0 * np.pi)
# A batch larger than p / _WOODBURY_FRACTION rows goes through refresh (O(p^3)) instead.
_WOODBURY_FRACTION = 4
# Refresh after this many times p rows added by Woodbury updates (amortised O(p^2) per row).
# Without refreshes, 4,000 single rows on p = 50 (s2 = 1e-2 and 1e-5) left alpha within
# 3e-10 (relative) and S within 2e-12 of a refresh: the bound is a safeguard.
_REFRESH_BASIS_MULTIPLE = 32


class FitStatistics(NamedTuple):
    """What a fit leaves for ``partial_fit``: its factors and the number of rows."""

    L: np.ndarray  # (p, p) lower factor of K_uu + jitter I
    R: np.ndarray  # (p, p) lower factor of V V^T + s2 I
    Vy: np.ndarray  # (p,) or (p, m), normalised targets
    jitter: float
    n_rows: int
    factors: PredictionFactors = None  # the fit's prediction_factors(L, R, Vy, ...), if made


def _add_outer(P, U, scale):
    """``P += scale * U U^T`` in place for a symmetric C-ordered ``P`` (one BLAS call)."""
    if U.shape[1] == 0:
        return
    # P.T is P's Fortran-ordered view, so dgemm writes into P's memory.
    dgemm(scale, U, U, beta=1.0, c=P.T, trans_b=1, overwrite_c=1)


def _border_inverse(P, c, d):
    """``(P_new, P c, s)``: the inverse of ``[[A, c], [c^T, d]]`` from ``P = A^-1``, with the
    Schur complement ``s = d - c^T P c`` (O(p^2))."""
    p = P.shape[0]
    x = P @ c
    s = d - c @ x
    out = np.empty((p + 1, p + 1))
    update = np.outer(x, x)
    update /= s
    np.add(P, update, out=out[:p, :p])  # P + x x^T / s, without two more p x p arrays
    out[p, :p] = out[:p, p] = -x / s
    out[p, p] = 1.0 / s
    return out, x, s


def _sqnorm(a):
    return float(np.sum(a * a))


class StreamingPosterior:
    """The ``p x p`` statistics of a fitted regressor's rows, updated batch by batch.

    Parameters
    ----------
    start : FitStatistics
        The fit's factors (normalised targets).
    noise_variance : float
    objective_value : float
        The fit's hyperparameter objective.
    objective : {"dtc", "vfe"}
    """

    def __init__(self, start, noise_variance, objective_value, objective):
        self.s2 = float(noise_variance)
        self.jitter = float(start.jitter)
        self.objective = objective
        self.L = np.array(start.L, dtype=np.float64)
        p = self.L.shape[0]
        self.VVt = start.R @ start.R.T - self.s2 * np.eye(p)
        self.Vy = np.array(start.Vy, dtype=np.float64)
        self.m = 1 if self.Vy.ndim == 1 else self.Vy.shape[1]
        self.n_rows = int(start.n_rows)
        self.refresh(start.R, start.factors)  # the fit's factors of these statistics
        # the objective's part that depends only on the rows (see the module docstring)
        self.rows_part = float(objective_value) - self._statistics_part()

    @property
    def p(self):
        return self.L.shape[0]

    def _statistics_part(self):
        s2, m = self.s2, self.m
        return self.beta2 / (2 * s2) + 0.5 * m * self.p * np.log(s2) - 0.5 * m * self.log_det

    @property
    def value(self):
        """The hyperparameter objective of the model on every row seen."""
        return self.rows_part + self._statistics_part()

    # ------------------------------------------------------------------ exact rebuild
    def refresh(self, R=None, factors=None):
        """Every derived quantity from ``V V^T`` and ``V y``: O(p^3). ``R`` (the factor of
        ``V V^T + s2 I``) and ``factors`` (:func:`~._prediction.prediction_factors` of
        these statistics): a fit's, not computed again."""
        p, s2, j = self.p, self.s2, self.jitter
        eye = np.eye(p)
        if R is None:
            R = cholesky(self.VVt + s2 * eye, lower=True, check_finite=False)
        f = prediction_factors(self.L, R, self.Vy, j, s2) if factors is None else factors
        self.alpha, self.S, self.delta = f.alpha, np.ascontiguousarray(f.S), f.jitter
        # the inverses by LAPACK potri: a third of cho_solve's arithmetic against I
        self.P_j = np.ascontiguousarray(_inverse_from_factor(R))
        self.log_det = 2.0 * float(np.sum(np.log(np.diag(R))))
        self.beta2 = _sqnorm(solve_lower(R, self.Vy))
        if self.delta >= j:  # the prediction's model is the state's
            self.P = self.P_j
        else:  # P = A'^-1, A' = V V^T + s2 (I - (j - delta) L^-1 L^-T), factored there
            self.P = np.ascontiguousarray(_inverse_from_factor(f.A_factor))
        self.since_refresh, self.stale = 0, False

    def refresh_if_due(self):
        """:meth:`refresh` once the updates since the last one exceed ``32 p``, or when a
        new basis vector left the prediction's quantities stale (:meth:`border`)."""
        if self.stale or self.since_refresh > _REFRESH_BASIS_MULTIPLE * self.p:
            self.refresh()

    # ------------------------------------------------------------------ new rows
    def whiten(self, K_ub):
        """``V_b = L^-1 K_ub`` for a batch's kernel block ``K_bu`` (``b x p``)."""
        return solve_lower(self.L, K_ub.T)

    def add_rows(self, V_b, y_b, kdiag_b, weight_sum=None):
        """Add a batch's likelihood terms: ``V_b`` (``p x b``), normalised ``y_b``, and
        ``k(x, x)`` of its rows (the VFE trace). Woodbury updates, or a refresh.

        Weighted rows come whitened (``_row_noise``) with ``weight_sum = sum w``: the
        evidence's ``log(2 pi s2)`` term then counts ``sum w`` rows, as the repeated rows."""
        b = V_b.shape[1]
        _add_outer(self.VVt, V_b, 1.0)
        self.Vy += V_b @ y_b
        self.n_rows += b
        s2, m = self.s2, self.m
        trace = float(np.sum(kdiag_b)) - _sqnorm(V_b) if self.objective == "vfe" else 0.0
        self.rows_part -= (
            _sqnorm(y_b) / (2 * s2)
            + 0.5 * m * (b if weight_sum is None else weight_sum) * (np.log(s2) + _LOG_2PI)
            + 0.5 * m * trace / s2
        )
        woodbury = b * _WOODBURY_FRACTION <= self.p
        if not woodbury or self.since_refresh + b > _REFRESH_BASIS_MULTIPLE * self.p:
            self.refresh()
            return
        self.since_refresh += b
        # P_j -= W C^-1 W^T, W = P_j V_b, C = I + V_b^T W; log|A| += log|C| (lemma)
        U, logdet_C = self._woodbury_factor(self.P_j, V_b)
        _add_outer(self.P_j, U, -1.0)
        self.log_det += logdet_C
        if self.P is not self.P_j:
            U, _ = self._woodbury_factor(self.P, V_b)
            _add_outer(self.P, U, -1.0)
        _add_outer(self.S, U, s2)  # S = M^-1 - s2 P
        self.beta2 = float(np.sum(self.Vy * (self.P_j @ self.Vy)))
        # GPML eq. (8.26): alpha = L^-T A'^-1 V y
        self.alpha = solve_lower(self.L, self.P @ self.Vy, trans=1)

    @staticmethod
    def _woodbury_factor(P, V_b):
        """``(U, log|C|)`` with ``U U^T = W C^-1 W^T``, ``W = P V_b``, ``C = I + V_b^T W``."""
        W = P @ V_b
        if W.shape[1] == 1:  # one row: C is a number
            c = 1.0 + float(V_b[:, 0] @ W[:, 0])
            return W / np.sqrt(c), float(np.log(c))
        C = V_b.T @ W
        C[np.diag_indices_from(C)] += 1.0
        F = cholesky(C, lower=True, check_finite=False)
        U = solve_lower(F, W.T).T  # W F^-T
        return U, 2.0 * float(np.sum(np.log(np.diag(F))))

    def add_vfe_trace(self, amount):
        """Lower the tracked rows' part by VFE's trace term for ``amount`` of prior variance
        newly explained (``> 0``) by a basis vector added from a batch."""
        if self.objective == "vfe":
            self.rows_part += 0.5 * self.m * amount / self.s2

    # ------------------------------------------------------------------ a new basis vector
    def border(self, k_u, k_jj, Vv, vv, vy):
        """Append a basis vector in O(p^2): ``L`` bordered with ``k_u = K(X_u, x_j)`` and
        ``k_jj + j``; ``V V^T`` with ``V v`` and ``|v|^2``, ``V y`` with ``v^T y`` (the rows
        whose ``v`` is known; see :mod:`._streaming`).

        The inverses follow by block inversion (Schur complements). With ``e = j - delta``
        and ``G = L^-1 L^-T``, bordering ``L`` by ``(l, l_pp)`` borders ``G`` with
        ``-G l / l_pp`` and ``(|L^-T l|^2 + 1) / l_pp^2`` and leaves its old block, so
        ``M = I - e G`` and ``A' = V V^T + s2 M`` are bordered too; ``M^-1 = S + s2 P``.
        """
        p, s2, e = self.p, self.s2, self.jitter - self.delta
        l = solve_lower(self.L, k_u)
        lpp = np.sqrt(k_jj + self.jitter - l @ l)
        L = np.zeros((p + 1, p + 1))
        L[:p, :p], L[p, :p], L[p, p] = self.L, l, lpp
        VVt = np.zeros((p + 1, p + 1))
        VVt[:p, :p], VVt[p, :p], VVt[:p, p], VVt[p, p] = self.VVt, Vv, Vv, vv
        self.Vy = np.concatenate([self.Vy, np.reshape(vy, (1,) + self.Vy.shape[1:])])
        self.since_refresh += 1
        P_j, x_j, s_j = _border_inverse(self.P_j, Vv, vv + s2)
        self.log_det += np.log(s_j)
        self.L, self.VVt, self.P_j = L, VVt, P_j
        self.beta2 = float(np.sum(self.Vy * (self.P_j @ self.Vy)))
        if self.stale:
            return
        if e == 0.0:  # M = I: S = I - s2 P, P = P_j
            P, x, s, Mm, sigma = P_j, x_j, s_j, np.zeros(p), 1.0
        else:
            t = solve_lower(self.L[:p, :p], l, trans=1)
            m = (e / lpp) * solve_lower(self.L[:p, :p], t)  # M's new column
            mu = 1.0 - e * (t @ t + 1.0) / lpp**2
            Mm = self.S @ m + s2 * (self.P @ m)  # M^-1 m
            sigma = mu - m @ Mm
            P, x, s = _border_inverse(self.P, Vv + s2 * m, vv + s2 * mu)
        # The new pivots of M's and A''s factors must stand clear of rounding, as
        # prediction_factors asks of delta; else refresh() chooses delta anew.
        floor = (p + 1) * np.finfo(float).eps
        if not (sigma > floor and s > floor * (float(np.max(np.diag(VVt))) + s2)):
            self.stale = True
            return
        # S = M^-1 - s2 P, bordered as the two inverses are
        S = np.empty((p + 1, p + 1))
        # S + Mm Mm^T / sigma - (s2 / s) x x^T, in S's new memory and one p x p temporary
        update = np.outer(Mm, Mm)
        update /= sigma
        np.add(self.S, update, out=S[:p, :p])
        np.outer(x, x, out=update)
        update *= s2 / s
        S[:p, :p] -= update
        S[p, :p] = S[:p, p] = -Mm / sigma + (s2 / s) * x
        S[p, p] = 1.0 / sigma - s2 / s
        self.P, self.S = P, S
        self.alpha = solve_lower(self.L, self.P @ self.Vy, trans=1)

    def nbytes(self):
        """Bytes held by the statistics' arrays."""
        arrays = [self.L, self.VVt, self.Vy, self.P_j, self.S, self.alpha]
        if self.P is not self.P_j:
            arrays.append(self.P)
        return sum(a.nbytes for a in arrays)
