"""The probit RVM's mean-field E-step (Quiñonero-Candela & Winther, eqs. (14)-(19)).

The E-step of the relevance vector classifier: a Gaussian approximation of the weights'
posterior on the active basis functions, from the probit likelihood's site moments
(:func:`probit_site`) and Newton-Raphson on the weights, with naive, TAP or Laplace cavity
variances; the M-step is the MacKay update shared with the regressor.
"""

import numpy as np
from scipy.linalg import cho_solve, cholesky, lapack, solve_triangular

from ..likelihoods import Probit
from ._basis_functions import basis_rows
from ._subspace_em import ALPHA_FLOOR, ActiveDesign, mackay_update

__all__ = ["MeanFieldEM", "probit_site"]

# Newton-Raphson on the weights (eq. 19): iterations and stopping Newton decrement F^T dmu.
_MAX_NEWTON = 50
_NEWTON_TOL = 1e-8
# Adaptive TAP: outer iterations over the cavity variances, their tolerance and damping.
_MAX_TAP = 30
_TAP_TOL = 1e-3
_TAP_DAMPING = 0.5


def probit_site(yc, V, t, s2):
    """``ln Z``, ``tau = d ln Z / d yc`` and ``d tau / d yc`` of eq. (18), vectorised.

    ``Z(yc, V + s2) = Phi(t yc / sqrt(V + s2))`` for the probit likelihood of eq. (14), with
    ``s2`` its noise variance: the tilted moments of :class:`~skgpsparse.likelihoods.Probit`
    (``tau`` is their ``alpha``, ``d tau / d yc`` their ``-nu``).

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.rvm._mean_field import probit_site
    >>> logz, tau, dtau = probit_site(np.array([0.0]), np.array([0.0]), np.array([1.0]), 1.0)
    >>> bool(np.isclose(tau[0], np.sqrt(2 / np.pi)))
    True
    """
    likelihood = Probit(s2)
    _, _, tau, nu = likelihood.site_update(t, yc, V)
    return likelihood.log_predictive(t, yc, V), tau, -nu


def _slope(V, dtau, s2):
    """``1 + V tau'``, which is ``>= s2 / (V + s2)`` (probit: ``tau' >= -1 / (V + s2)``);
    kept there when rounding (huge naive-mean-field ``V``) would push it to 0 or below."""
    return np.maximum(1.0 + V * dtau, s2 / (V + s2))


class MeanFieldEM:
    """Mean-field E-step (SSEM paper §4, eqs. 16-19) and MacKay M-step of the binary RVM.

    With cavity variances ``V`` (0: Laplace; ``[Phi A^-1 Phi^T]_ii``: naive mean field; adaptive
    TAP: ``V_i = s_i / (1 - Omega_i s_i)`` with ``s_i = [Phi Sigma Phi^T]_ii``, the cavity of the
    Gaussian posterior marginal), the mean field equations ``mu = A^-1 Phi^T tau`` (eq. 17),
    ``yc = Phi mu - V tau`` are solved by Newton-Raphson on ``mu`` (eq. 19),
    ``dmu = Sigma (Phi^T tau - A mu)`` with ``Sigma = (A + Phi^T Omega Phi)^-1`` (eq. 16) and
    ``Omega = -tau' / (1 + V tau')``. ``Sigma^-1`` is factored as ``B = I + D Phi^T Omega Phi D``
    (``D = A^-1/2``), refactorised at every Newton step since ``Omega`` changes (O(n M^2)).
    """

    def __init__(self, kernel, X, t, centers, bias_mask, cavity, probit_variance, alpha_max):
        n = X.shape[0]
        self.kernel, self.X, self.t = kernel, X, t
        self.centers, self.bias_mask = centers, bias_mask
        self.cavity, self.s2, self.alpha_max = cavity, probit_variance, alpha_max
        self.design = ActiveDesign(n, owner="RelevanceVectorClassifier")
        self.mu = np.empty(0)
        self.V = np.zeros(n)
        self.yc = np.zeros(n)
        self.L = np.empty((0, 0))
        self.omega = np.zeros(n)
        self.n_newton = 0

    @property
    def n_active(self):
        return self.design.size

    def add(self, entries, alpha):
        rows = basis_rows(self.kernel, self.X, self.centers[entries], self.bias_mask[entries])
        if alpha is None:
            alpha = self.alpha_max
        elif isinstance(alpha, str):  # "auto": prior variance of y(x_i) ~ 1 on average
            alpha = np.einsum("ij,ij->", rows, rows) / len(self.t)
        self.design.append(rows, entries, alpha)
        self.mu = np.append(self.mu, np.zeros(len(entries)))

    def _cavity_mean(self, h, V):
        """Solve ``yc + V tau(yc) = h`` (``yc = Phi mu - V tau``) elementwise by Newton.

        ``d/dyc (yc + V tau) = 1 + V tau' >= s2 / (V + s2) > 0``: one root, found from the
        previous solution."""
        if not np.any(V):
            return h
        y = self.yc.copy()
        for _ in range(50):
            _, tau, dtau = probit_site(y, V, self.t, self.s2)
            g = y + V * tau - h
            y = y - g / _slope(V, dtau, self.s2)
            if np.max(np.abs(g)) < 1e-12 * (1.0 + np.max(np.abs(h))):
                break
        return y

    def _evaluate(self, mu, V):
        """Cavity means, sites and the mean-field residual ``F = Phi^T tau - A mu``."""
        rows, alpha = self.design.rows, self.design.alpha
        h = rows.T @ mu
        yc = self._cavity_mean(h, V)
        logz, tau, dtau = probit_site(yc, V, self.t, self.s2)
        F = rows @ tau - alpha * mu
        return h, yc, logz, tau, dtau, F

    def _merit(self, mu, logz, F):
        if self.cavity == "laplace":  # minus the log posterior of the weights
            return -(logz.sum() - 0.5 * np.sum(self.design.alpha * mu * mu))
        return np.sum(F * F / self.design.alpha)  # |D F|^2

    def _factor(self, omega):
        d = self.design.alpha**-0.5
        P = self.design.rows * d[:, None]
        B = (P * omega) @ P.T
        B[np.diag_indices_from(B)] += 1.0
        return cholesky(B, lower=True, check_finite=False)

    def _newton(self, mu, V):
        """Newton-Raphson on ``mu`` for fixed cavity variances ``V`` (eq. 19), with step
        halving on the merit; returns ``mu``, the factor ``L`` of ``B`` and ``Omega`` there,
        and ``ln Z``."""
        d = self.design.alpha**-0.5
        _, self.yc, logz, _, dtau, F = self._evaluate(mu, V)
        for _ in range(_MAX_NEWTON):
            self.n_newton += 1
            omega = -dtau / _slope(V, dtau, self.s2)  # eq. (18) and below
            L = self._factor(omega)
            dmu = d * cho_solve((L, True), d * F, check_finite=False)  # eq. (19)
            if float(F @ dmu) < _NEWTON_TOL:  # Newton decrement
                break
            merit0 = self._merit(mu, logz, F)
            step = 1.0
            for _ in range(30):
                out = self._evaluate(mu + step * dmu, V)
                if self._merit(mu + step * dmu, out[2], out[5]) <= merit0 or step < 1e-6:
                    break
                step *= 0.5
            mu = mu + step * dmu
            _, self.yc, logz, _tau, dtau, F = out
        return mu, L, omega, logz

    def e_step(self):
        """Solve the mean field equations for the current ``alpha``; returns the approximate
        log evidence ``sum ln Z - mu^T A mu / 2 - log|B| / 2`` (the Laplace form, exact in
        the Laplace case ``V = 0``)."""
        M = self.design.size
        n = len(self.t)
        if M == 0:
            self.V = np.zeros(n)
            self.yc = np.zeros(n)
            logz, _, dtau = probit_site(self.yc, self.V, self.t, self.s2)
            self.omega = -dtau
            self.L = np.empty((0, 0))
            return float(logz.sum())
        alpha = self.design.alpha
        d = alpha**-0.5
        if self.cavity == "naive":
            self.V = (self.design.rows**2 / alpha[:, None]).sum(axis=0)
        elif self.cavity == "laplace":
            self.V = np.zeros(n)
        mu = self.mu
        for _ in range(_MAX_TAP if self.cavity == "tap" else 1):
            mu, L, omega, logz = self._newton(mu, self.V)
            if self.cavity != "tap":
                break
            # adaptive TAP: V_i = s_i / (1 - Omega_i s_i), s_i = [Phi Sigma Phi^T]_ii, damped
            S = solve_triangular(L, self.design.rows * d[:, None], lower=True, check_finite=False)
            s = np.einsum("ij,ij->j", S, S)
            V_new = s / np.maximum(1.0 - omega * s, 1e-12)
            change = np.max(np.abs(V_new - self.V)) / (1.0 + np.max(self.V))
            if change < _TAP_TOL:
                break
            self.V = self.V + _TAP_DAMPING * (V_new - self.V)
        self.mu, self.L, self.omega = mu, L, omega
        logdet = 2.0 * np.sum(np.log(np.diag(L)))
        return float(logz.sum() - 0.5 * np.sum(alpha * mu * mu) - 0.5 * logdet)

    def em_step(self):
        """Mean-field E-step, MacKay M-step (eq. 12), pruning at ``alpha >= L``."""
        ll = self.e_step()
        M = self.design.size
        if M == 0:
            return ll
        Linv, _ = lapack.dtrtri(self.L, lower=1)
        gamma = 1.0 - np.einsum("ij,ij->j", Linv, Linv)  # 1 - alpha_j Sigma_jj
        floor = np.minimum(self.design.rows**2 @ self.omega, self.design.alpha / ALPHA_FLOOR)
        alpha = mackay_update(gamma, self.mu, floor=floor)  # eq. (12)
        keep = alpha < self.alpha_max
        self.design.alpha = alpha
        self.design.keep(keep)
        self.mu = self.mu[keep]
        return ll
