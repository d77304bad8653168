"""Site parameters by NLP minimisation, additive-model paper §3, vectorised over a working set.

Adding basis vector ``j`` with site ``(p_j, m_j)`` changes the posterior by eq. (7)::

    diag(A)' = diag(A) - eta_j a_j^2,    f' = f + alpha_j a_j,
    eta_j = p_j / (1 + p_j A_jj),        alpha_j = eta_j (m_j - f_j),

where ``a_j = A_.j`` is the current posterior covariance column. Moment matching (ADF eq. (2))
fixes ``(p_j, m_j)`` from ``j``'s own likelihood; here they minimise the NLP of eq. (5) (or the
held-out NLP of eq. (4)) over ``tau_j = log p_j`` and ``m_j``. Keeping ``diag(A)' >= 0`` needs
``eta_j <= eta~_j = min_l A_ll / a_lj^2``; when ``eta~_j A_jj < 1`` this is the bound
``p_j <= eta~_j / (1 - eta~_j A_jj)`` (the paper prints ``A_li / k_li^2``; the variance bound is
on the updated diagonal, ``A_ll - eta a_lj^2 >= 0``). The objective is separable over
candidates, so one bounded L-BFGS-B run on all ``2 kappa`` variables optimises every candidate of
the working set at once, starting from the moment-matching sites; each candidate keeps the better
of its starts and optima (two starts, see :func:`optimize_sites`).
"""

import numpy as np
from scipy.optimize import minimize

__all__ = ["optimize_sites"]

# Bounds of the site precision p: moment matching gives p <= 1 for the probit (constants of
# the search, the same for every likelihood). Wider bounds
# (1e-8, 1e4) let the optimiser reach the box edges (a pinned site, or p ~ 0 with |m| ~ 1e9)
# whose effect is an exact cancellation under the selection-time kernel only; after the
# hyperparameter step such sites gave test NLPs of 8 on a Raetsch image realization.
_MIN_PRECISION = 1e-3
_MAX_PRECISION = 1e2
# Function/gradient evaluations per working set (the paper bounds them to keep O(n) per call).
_MAX_FUN = 30


def _objective(x, T, f, diag_A, y, bias, a_J, weights, likelihood):
    """Per-candidate weighted NLP and its gradient w.r.t. ``(eta, alpha)``.

    The likelihood gives ``log Z`` of every row under its updated marginal and the
    derivatives ``d1 = d log Z / d mean``, ``d2 = d log Z / d var``: the mean moves by
    ``alpha T`` and the variance by ``-eta T^2``, so ``d(-log Z) / d alpha = -d1 T`` and
    ``d(-log Z) / d eta = d2 T^2`` (0 where the variance is clipped at 0). Evaluated about 30
    times per working set on ``n x 2 kappa`` arrays, so it works in place on its own arrays.
    """
    k = a_J.size
    eta, alpha = x[:k], x[k:]
    # eq. (7): the candidate's update of the variances and means at all n points,
    # new_var = max(diag_A - eta T T, 0), mean = f + b + alpha T
    var = np.multiply(eta, T)
    var *= T
    np.subtract(diag_A[:, None], var, out=var)
    free = var > 0.0
    var[~free] = 0.0
    mean = np.multiply(alpha, T)
    np.add(f[:, None] + bias, mean, out=mean)
    log_z, d1, d2 = likelihood.tilted(y[:, None], mean, var)
    # d_alpha = -sum(w d1 T)
    g = weights * d1
    g *= T
    d_alpha = -np.sum(g, axis=0)
    # d_eta = sum(w d2 T T) over the points whose variance stays positive
    g = weights * d2
    g *= T
    g *= T
    g[~free] = 0.0
    d_eta = np.sum(g, axis=0)
    values = -np.sum(log_z * weights, axis=0)
    return values, np.concatenate([d_eta, d_alpha])


def _upper_precision(T, diag_A, a_J):
    """Largest ``p_j`` keeping every ``A_ll - eta_j a_lj^2 >= 0`` (§3, capped)."""
    sq = T * T
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(sq > 0.0, np.maximum(diag_A, 0.0)[:, None] / sq, np.inf)
    eta_max = np.min(ratio, axis=0)
    prod = eta_max * a_J
    with np.errstate(divide="ignore", invalid="ignore"):
        p_max = np.where(prod < 1.0, eta_max / (1.0 - prod), np.inf)
    return np.clip(p_max, _MIN_PRECISION, _MAX_PRECISION)


def optimize_sites(T, f, diag_A, y, bias, J, p0, m0, weights, *, likelihood, max_fun=_MAX_FUN):
    """Sites ``(p_j, m_j)`` of each candidate ``j in J`` minimising the weighted NLP.

    Parameters
    ----------
    T : ndarray of shape (n, kappa)
        Posterior covariance columns ``A_.J``.
    f, diag_A, y : ndarray of shape (n,)
        Current posterior means, variances and labels in {-1, +1}.
    bias : float
        Bias ``b``: the likelihood sees the latent value ``f + b``.
    J : ndarray of shape (kappa,)
        Candidate indices (``T[J[i], i] = A_JiJi``).
    p0, m0 : ndarray of shape (kappa,)
        Starting sites (moment matching, eq. (2)).
    weights : ndarray of shape (n, kappa) or (n, 1)
        Weight of point ``l`` in candidate ``j``'s objective: ``1 / n`` for NLP_a eq. (5);
        ``1 / (n - p - 1)`` off the basis and the candidate, else 0, for eq. (4).
    likelihood : skgpsparse.likelihoods.Likelihood
        ``p(y | f + b)``: its tilted moments give the objective and its gradient.
    max_fun : int, default=30
        Bound on the function/gradient evaluations.

    Returns
    -------
    precision, mean : ndarray of shape (kappa,)
        The optimised sites, ``0 < p_j <= p_max_j``.
    loss : ndarray of shape (kappa,)
        The weighted NLP after adding each candidate with its optimised site.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.inference._site_optimization import optimize_sites
    >>> from skgpsparse.likelihoods import Probit
    >>> T = np.array([[1.0], [0.5]]); f = np.zeros(2); A = np.ones(2); y = np.ones(2)
    >>> p, m, loss = optimize_sites(T, f, A, y, 0.0, np.array([0]), np.array([0.5]),
    ...                             np.array([1.0]), np.full((2, 1), 0.5), likelihood=Probit())
    >>> bool(loss[0] < -np.log(0.5) and p[0] > 0)
    True
    """
    J = np.asarray(J, dtype=np.intp)
    a_J = np.maximum(diag_A[J], 0.0)
    f_J = f[J]
    weights = np.broadcast_to(weights, T.shape)
    p_max = _upper_precision(T, diag_A, a_J)
    p0 = np.clip(p0, _MIN_PRECISION, p_max)
    # eq. (7)'s own variables: eta_j in [eta(p_min), eta(p_max)] and alpha_j = eta_j (m_j - f_j).
    # In (eta, alpha) the box is the variance bound and the objective is well conditioned; in
    # (log p, m) it is flat as p -> 0 or p -> inf and the optimiser stalls in those plateaus.
    k = J.size
    eta_lo = _MIN_PRECISION / (1.0 + _MIN_PRECISION * a_J)
    eta_hi = p_max / (1.0 + p_max * a_J)
    eta0 = p0 / (1.0 + p0 * a_J)
    alpha0 = eta0 * (np.asarray(m0, dtype=float) - f_J)
    # The objective is not convex in (eta, alpha): a mean shift with little variance reduction
    # (eta -> 0) and a pinned site (eta -> eta_max) are separate basins. Two starts per
    # candidate, moment matching and the largest eta, run in the same batched L-BFGS-B call.
    starts = np.concatenate([eta0, eta_hi, alpha0, alpha0])
    args = (np.hstack([T, T]), f, diag_A, y, bias, np.tile(a_J, 2), np.hstack([weights] * 2),
            likelihood)
    start_values, _ = _objective(starts, *args)

    def total(x):
        values, grad = _objective(x, *args)
        value = float(np.sum(values))
        if not np.isfinite(value):
            return np.finfo(float).max / 1e10, np.zeros_like(x)
        return value, grad

    bounds = list(zip(np.tile(eta_lo, 2), np.tile(eta_hi, 2))) + [(None, None)] * (2 * k)
    res = minimize(
        total,
        starts,
        jac=True,
        method="L-BFGS-B",
        bounds=bounds,
        options={"maxfun": max_fun, "maxiter": max_fun},
    )
    end_values, _ = _objective(res.x, *args)
    # per start keep the better of start and end, per candidate the better start; the moment
    # matching start comes first, so the result is never worse than moment matching
    use_end = np.isfinite(end_values) & (end_values < start_values)
    values = np.where(use_end, end_values, start_values)
    x = np.where(np.tile(use_end, 2), res.x, starts)
    eta, alpha = x[: 2 * k].reshape(2, k), x[2 * k :].reshape(2, k)
    pick = np.argmin(values.reshape(2, k), axis=0)
    cols = np.arange(k)
    eta, alpha = eta[pick, cols], alpha[pick, cols]
    values = values.reshape(2, k)[pick, cols]
    p = np.clip(eta / np.maximum(1.0 - eta * a_J, 1e-300), _MIN_PRECISION, p_max)
    return p, f_J + alpha / eta, values
