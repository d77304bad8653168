"""The IVM's hyperparameter objective: the EP evidence of the basis labels.

``hyperparameter_objective="evidence"`` follows the informative vector machine (Lawrence,
Seeger and Herbrich 2003): the basis is selected by ADF under the current ``(theta, b)``,
then ``(theta, b)`` maximise the approximate marginal likelihood of the basis labels ``y_u``,
then the basis is selected afresh. The approximation is EP's (GPML eq. (3.65)) with the
site parameters at the EP fixed point FOR THE HYPERPARAMETERS BEING EVALUATED: every call runs
EP on the ``p`` basis latents (GPML Algorithm 3.5, warm-started from the previous sites, the
ADF sites at first). Holding the ADF sites fixed instead is what made the objective
degenerate: away from the hyperparameters that produced them, stale sites are pseudo-targets
whose evidence grows without bound towards a constant latent function (infinite length
scale) or white noise (zero amplitude). At the fixed point the implicit dependence of the
sites drops out of the gradient (Seeger 2005; GPML eq. (5.26)), so the explicit gradient is
exact::

    d(-log Z)/d theta_j = -1/2 w^T dK w + 1/2 tr(C dK),   C = S B^-1 S,  w = (K + S^-2)^-1 mu~,
    d(-log Z)/d b       = -sum_i d log Z_i / d mu_-i,

with ``S = diag(tau~)^1/2``, ``B = I + S K S`` and ``Z_i`` the normaliser of the tilted
distribution at the cavity ``(mu_-i + b, s2_-i)`` (for the probit, ``d log Z_i / d mu_-i =
y_i r_i / sqrt(1 + s2_-i)``, ``r_i = N(z_i)/Phi(z_i)``, ``z_i = y_i (mu_-i + b) /
sqrt(1 + s2_-i)``). The likelihood object gives ``log Z_i``, its derivative and the site
updates (:mod:`skgpsparse.likelihoods`). Cost O(p^3) per EP sweep.
"""

import numpy as np
from scipy.linalg import cho_solve, cholesky, solve_triangular
from scipy.linalg.blas import dger as _dger

__all__ = ["EvidenceObjective", "negative_log_evidence"]

# EP on the basis: convergence tolerance on the site parameters and a cap on the sweeps.
_EP_TOL = 1e-7
_EP_MAX_SWEEPS = 100


def _posterior(K, tau, nu):
    """``Sigma = K - V^T V`` (``V = L^-1 S K``), ``mu = Sigma nu`` and ``L``, GPML eq. (3.68)."""
    s = np.sqrt(tau)
    L = cholesky(np.eye(tau.size) + s[:, None] * K * s[None, :], lower=True)
    V = solve_triangular(L, s[:, None] * K, lower=True)
    Sigma = np.ascontiguousarray(K - V.T @ V)
    return Sigma, Sigma @ nu, L


def _cavities(Sigma, mu, tau, nu):
    """Cavity means and variances ``(mu_-i, s2_-i)`` of all sites, GPML eq. (3.56)."""
    d = np.maximum(np.diag(Sigma), 1e-300)
    # s2_- = 1 / (1/Sigma_ii - tau_i) = Sigma_ii / (1 - tau_i Sigma_ii) (> 0: Sigma_ii < 1/tau_i)
    s2 = d / np.maximum(1.0 - tau * d, 1e-300)
    return s2 * (mu / d - nu), s2


def _ep(K, y, bias, tau, nu, tol, max_sweeps, likelihood):
    """Sequential EP (GPML Algorithm 3.5) with the likelihood's sites, from ``(tau, nu)``."""
    tau, nu = tau.copy(), nu.copy()
    Sigma, mu, L = _posterior(K, tau, nu)
    converged = False
    for _ in range(max_sweeps):
        old_tau, old_nu = tau.copy(), nu.copy()
        for i in range(y.size):
            sii = Sigma[i, i]
            if not sii > 1e-300 or not 1.0 - tau[i] * sii > 1e-12:
                continue  # round-off left no cavity (Sigma_ii >= 1/tau_i): keep the site
            tau_c = 1.0 / sii - tau[i]  # GPML eq. (3.56)
            nu_c = mu[i] / sii - nu[i]
            s2c = 1.0 / tau_c
            mc = nu_c * s2c
            # GPML eqs. (3.58)-(3.59): the site whose product with the cavity has the tilted
            # distribution's moments (the likelihood sees the latent value f + b)
            new_tau, shift = likelihood.site_update_one(float(y[i]), mc + bias, s2c)
            d_tau = new_tau - tau[i]
            d_nu = (new_tau * (mc + shift) if new_tau > 0.0 else 0.0) - nu[i]
            tau[i] += d_tau
            nu[i] += d_nu
            # GPML eq. (3.70): rank-one update of Sigma (in place, BLAS dger); mu = Sigma nu
            # follows in O(p): mu' = mu - c col (col . nu_old) + Sigma'_.i d_nu
            col = Sigma[:, i].copy()
            c = d_tau / (1.0 + d_tau * sii)
            _dger(-c, col, col, a=Sigma.T, overwrite_a=True)  # Sigma.T: Fortran order, in place
            mu += Sigma[:, i] * d_nu - c * col * (col @ nu - col[i] * d_nu)
        Sigma, mu, L = _posterior(K, tau, nu)  # re-computed for accuracy, GPML eq. (3.53)
        change = max(np.max(np.abs(tau - old_tau)), np.max(np.abs(nu - old_nu)), 0.0)
        if change < tol:
            converged = True
            break
    return tau, nu, Sigma, mu, L, converged


def negative_log_evidence(
    kernel,
    X_u,
    y_u,
    bias,
    *,
    likelihood,
    site_precision=None,
    site_natural_mean=None,
    eval_gradient=False,
    return_sites=False,
    tol=_EP_TOL,
    max_sweeps=_EP_MAX_SWEEPS,
):
    """Minus the EP log marginal likelihood of the basis labels, and its gradient.

    Runs EP on the basis latents ``f_u ~ N(0, K_uu)`` with likelihoods ``p(y_i | f_i + b)``
    and returns ``-log Z_EP`` (GPML eq. (3.65), written without ``1/tau~`` so that sites with
    ``tau~_i = 0`` are harmless).

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
        Prior covariance; the gradient is w.r.t. ``kernel.theta`` (log-space).
    X_u : ndarray of shape (p, n_features)
        Basis inputs.
    y_u : ndarray of shape (p,)
        Their labels in {-1, +1}.
    bias : float
        Bias ``b``: the likelihood sees the latent value ``f + b``.
    likelihood : skgpsparse.likelihoods.Likelihood
        ``p(y | f + b)`` (the binary model's ``likelihood``).
    site_precision, site_natural_mean : ndarray of shape (p,), default=None
        Start of EP: ``tau~ = p_u`` and ``nu~ = p_u m_u`` (e.g. the ADF sites); zeros if None.
    eval_gradient : bool, default=False
        Also return the gradient w.r.t. ``[theta..., b]``.
    return_sites : bool, default=False
        Also return the EP sites ``(tau~, nu~)`` (to warm-start the next call).
    tol, max_sweeps : float, int
        EP stops when no site parameter moves by more than ``tol`` in a sweep, or after
        ``max_sweeps`` sweeps.

    Returns
    -------
    value : float
        ``-log Z_EP``.
    grad : ndarray of shape (n_theta + 1,)
        Only if ``eval_gradient``.
    sites : tuple of two ndarrays
        Only if ``return_sites``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.latent.objectives._basis_evidence import negative_log_evidence
    >>> from skgpsparse.likelihoods import Probit
    >>> X = np.array([[-1.0], [1.0]]); y = np.array([1.0, 1.0])
    >>> v, g = negative_log_evidence(RBF(1.0), X, y, 0.0, likelihood=Probit(),
    ...                              eval_gradient=True)
    >>> # correlated latents make equal labels likelier than two coin flips
    >>> bool(0 < v < 2 * np.log(2)), g.shape
    (True, (2,))
    """
    y = np.asarray(y_u, dtype=float)
    p = y.size
    if p == 0:  # an empty basis: Z = 1, and nothing depends on (theta, b)
        out = [0.0]
        if eval_gradient:
            out.append(np.zeros(np.size(kernel.theta) + 1))
        if return_sites:
            out.append((np.zeros(0), np.zeros(0)))
        return out[0] if len(out) == 1 else tuple(out)
    tau = np.zeros(p) if site_precision is None else np.asarray(site_precision, dtype=float)
    nu = np.zeros(p) if site_natural_mean is None else np.asarray(site_natural_mean, dtype=float)
    tau = np.maximum(tau, 0.0)
    nu = np.where(tau > 0, nu, 0.0)
    if eval_gradient:
        K, dK = kernel(X_u, eval_gradient=True)
    else:
        K = kernel(X_u)
    tau, nu, Sigma, mu, L, _ = _ep(K, y, float(bias), tau, nu, tol, max_sweeps, likelihood)
    mc, s2c = _cavities(Sigma, mu, tau, nu)
    log_z_sites, d_mean, _ = likelihood.tilted(y, mc + bias, s2c)
    g = 1.0 + tau * s2c
    # GPML eq. (3.65) with log|K + S~| = log|B| - sum log tau~ and mu~ = nu~ / tau~ expanded:
    # the log tau~ terms cancel and the nu~^2 / tau~ terms combine to -nu~^2 s2_- / (1 + tau~ s2_-)
    log_z = (
        -np.sum(np.log(np.diag(L)))
        + 0.5 * np.sum(np.log(g))
        + np.sum(log_z_sites)
        + 0.5 * nu @ mu
        + np.sum((tau * mc**2 - 2.0 * mc * nu - nu**2 * s2c) / (2.0 * g))
    )
    out = [float(-log_z)]
    if eval_gradient:
        s = np.sqrt(tau)
        # GPML Algorithm 5.2: w = (K + S~^-1)^-1 mu~ = nu~ - S B^-1 S K nu~, C = S B^-1 S
        w = nu - s * cho_solve((L, True), s * (K @ nu))
        C = s[:, None] * cho_solve((L, True), np.diag(s))
        # GPML eq. (5.26): d log Z / d theta_j = 1/2 tr((w w^T - C) dK_j)
        grad_theta = 0.5 * np.einsum("i,ijt,j->t", w, dK, w) - 0.5 * np.einsum("ij,ijt->t", C, dK)
        grad_b = np.sum(d_mean)
        out.append(-np.append(grad_theta, grad_b))
    if return_sites:
        out.append((tau, nu))
    return out[0] if len(out) == 1 else tuple(out)


class EvidenceObjective:
    """``obj_func(theta_and_b, eval_gradient=True)``: ``-log Z_EP`` plus the prior of ``b``.

    EP is warm-started from the sites of the previous call (the ADF sites at first).
    """

    def __init__(self, kernel, X_u, y_u, site_precision, site_mean, bias_prior, likelihood):
        self.kernel, self.X_u, self.y_u = kernel, X_u, y_u
        self.likelihood = likelihood
        self.sites = (site_precision, site_precision * site_mean)
        self.b0, self.sb = bias_prior

    def __call__(self, theta, eval_gradient=True):
        k = self.kernel.clone_with_theta(theta[:-1])
        out = negative_log_evidence(
            k,
            self.X_u,
            self.y_u,
            theta[-1],
            likelihood=self.likelihood,
            site_precision=self.sites[0],
            site_natural_mean=self.sites[1],
            eval_gradient=eval_gradient,
            return_sites=True,
        )
        dev = (theta[-1] - self.b0) / self.sb
        value = out[0] + 0.5 * dev**2
        if np.isfinite(value) and np.all(np.isfinite(out[-1][0])):
            self.sites = out[-1]
        else:  # keep the line search away, never return NaN
            value = np.finfo(float).max / 1e10
            return (value, np.zeros(theta.shape)) if eval_gradient else value
        if not eval_gradient:
            return value
        grad = out[1].copy()
        grad[-1] += dev / self.sb
        return value, grad
