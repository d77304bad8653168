"""Passes over the row blocks of ``V = L^-1 K_uf`` for the all-rows EP: ADF start and EP sweeps.

Notation of :mod:`skgpsparse.inference._ep`: ``f = V^T w + e``, ``w ~ N(0, I_p)``,
``e ~ N(0, Lambda)``; row ``i``'s site ``(tau~_i, nu~_i)`` enters the posterior of ``w`` as
``g_i = tau~_i / h_i`` and ``a_i = nu~_i / h_i`` with ``h_i = 1 + Lambda_i tau~_i``, so that

    B = I + sum_i g_i v_i v_i^T = L_B L_B^T,   mean_w = B^-1 sum_i a_i v_i,

and the marginal of ``f_i`` is ``mu_i = (v_i^T mean_w + Lambda_i nu~_i) / h_i``,
``s2_i = Lambda_i / h_i + |L_B^-1 v_i|^2 / h_i^2``. A row of weight ``c_i`` (``sample_weight``,
:class:`~skgpsparse.inference._sparse_prior.SparsePrior`'s ``weights``) stands for ``c_i`` copies
of itself: at EP's fixed point the copies have equal sites, so the row keeps one copy's site
``(tau~_i, nu~_i)`` and its copies enter the sums as ``c_i g_i v_i v_i^T`` and ``c_i a_i v_i``.
Each copy's marginal is the formula above under that ``B`` (each copy has its own FITC noise
``e``), and its cavity removes one copy's site: the combined site is ``c_i`` times one copy's,
the power-EP update of the repeated rows, whose fixed point is theirs. Everything EP needs from
the ``n`` rows is a sum over rows (``B``, ``sum a_i v_i``) or a per-row quantity under a fixed
``L_B``, so a pass reads ``V`` once, a block of rows at a time:

- :func:`ep_sweep` fuses the two passes of a parallel EP sweep: the marginals of the current
  sites under their ``L_B`` (one triangular solve per block), their cavities and the new sites
  (GPML eqs. (3.56)-(3.59), by the likelihood's ``site_update``), and the system ``B`` of
  the new (damped) sites (one SYRK per block), for the next sweep.
- A likelihood that is not log-concave (its ``log_concave`` is False: the Student-t) gets
  *signed* sites (:func:`signed_sites`): a site precision may be negative, as EP's moment
  matching gives it (Jylanki, Vanhatalo and Vehtari 2011, "Robust Gaussian process regression
  with a Student-t likelihood", JMLR 12, §3-4), within guards that keep every cavity and
  ``h = 1 + Lambda tau~`` positive; the engine keeps ``B`` positive definite by damping
  (:func:`~skgpsparse.inference._ep.all_rows_ep`). A log-concave likelihood's sites stay the
  likelihood's own ``site_update`` (non-negative precisions), unchanged.
- :func:`adf_sites` is assumed density filtering over all rows (the sparse online GP of
  Csato and Opper 2002, each site matched once against the posterior of the rows before it):
  each block of rows takes its sites from the marginals under the posterior of all previous
  blocks, then joins the posterior (``B += V_J G_J V_J^T``, a new ``p x p`` factor). With
  blocks of one row this is the sequential ADF, rank-one updates of the ``p x p`` posterior;
  with blocks of a few thousand rows it costs one EP sweep (BLAS-3) and starts EP far closer
  to its fixed point than zero sites do.
"""

from collections import namedtuple

import numpy as np
from scipy.linalg import cholesky, solve_triangular
from scipy.linalg.blas import dsyrk

from ..likelihoods import Probit
from ._row_columns import block_rows

__all__ = [
    "WeightPosterior",
    "adf_block",
    "adf_sites",
    "block_rows",
    "cavities",
    "ep_sweep",
    "marginal_pass",
    "signed",
    "signed_sites",
    "system",
    "system_sums",
    "weight_posterior",
]

# An ADF block has at least this many rows per basis vector (each block refactors B, p^3 / 3).
_ADF_ROWS_PER_BASIS = 4

# The likelihood of the functions below when none is given (the classifier's).
PROBIT = Probit()
# Signed sites (signed_sites): a site precision stays above -_GUARD / s2_-, so the marginal's
# precision 1 / s2_- + tau~ keeps at least 1 - _GUARD of the cavity's, and above
# -_GUARD / Lambda, so that h = 1 + Lambda tau~ stays positive (Jylanki et al. 2011, §4.1).
_GUARD = 0.99

WeightPosterior = namedtuple("WeightPosterior", ["L_B", "Ua", "mean_w"])
WeightPosterior.__doc__ = "``B = L_B L_B^T``, ``Ua = L_B^-1 V a`` and ``mean_w = B^-1 V a``."


def _rows_of(bias, J):
    """The bias of the rows ``J``: a scalar, or the ``J`` entries of a bias per row (the
    online posterior's batch EP, whose earlier rows shift each new row's latent mean)."""
    return bias[J] if np.ndim(bias) else bias


def effective_sites(lam, tau, nu):
    """``h = 1 + Lambda tau~``, ``g = tau~ / h``, ``a = nu~ / h`` (finite at ``tau~ = 0``)."""
    h = 1.0 + lam * tau
    return h, tau / h, nu / h


def _syrk(S, V_J, g_J, sign=1.0):
    """``S += sign V_J G_J V_J^T`` (lower triangle, one SYRK; ``g_J >= 0``), in place."""
    W = V_J * np.sqrt(g_J)  # keeps V's layout; SYRK reads W or W^T without a copy
    if W.flags.f_contiguous:
        return dsyrk(sign, W, beta=1.0, c=S, trans=0, lower=1, overwrite_c=1)
    return dsyrk(sign, W.T, beta=1.0, c=S, trans=1, lower=1, overwrite_c=1)


def _accumulate(S, Va, V_J, g_J, a_J):
    """``S += V_J G_J V_J^T`` (lower triangle, one SYRK) and ``Va += V_J a_J``, in place.

    Signed sites (negative ``g``) take a second SYRK that subtracts their rows' part."""
    if np.any(g_J < 0.0):
        S = _syrk(S, V_J, np.maximum(g_J, 0.0))
        S = _syrk(S, V_J, np.maximum(-g_J, 0.0), -1.0)
    else:
        S = _syrk(S, V_J, g_J)
    Va += V_J @ a_J
    return S


def _weighted(weights, J, g_J, a_J):
    """``(c_J g_J, c_J a_J)``: a row's copies in the system (module docstring)."""
    if weights is None:
        return g_J, a_J
    return weights[J] * g_J, weights[J] * a_J


def _zero_system(p):
    return np.zeros((p, p), order="F"), np.zeros(p)


def weight_posterior(S, Va):
    """Factor ``B = I + S`` (``S``'s lower triangle): :class:`WeightPosterior`."""
    B = S + np.eye(S.shape[0])
    L_B = cholesky(B, lower=True, check_finite=False)
    Ua = solve_triangular(L_B, Va, lower=True, check_finite=False)
    mean_w = solve_triangular(L_B, Ua, lower=True, trans="T", check_finite=False)
    return WeightPosterior(L_B, Ua, mean_w)


def system_sums(prior, tau, nu):
    """``(B - I, V a)`` of the sites ``(tau~, nu~)`` (lower triangle), by one SYRK pass over
    ``V``: a row partition's part of the system."""
    _, g, a = effective_sites(prior.lam, tau, nu)
    S, Va = _zero_system(prior.columns.shape[0])
    for J, V_J in prior.columns.blocks():
        S = _accumulate(S, Va, V_J, *_weighted(prior.weights, J, g[J], a[J]))
    return S, Va


def system(prior, tau, nu):
    """The posterior of ``w`` under the sites ``(tau~, nu~)``, by one SYRK pass over ``V``."""
    return weight_posterior(*system_sums(prior, tau, nu))


def _block_marginals(V_J, lam_J, h_J, nu_J, post):
    """``(mu, s2, |L_B^-1 v_i|^2)`` of a block of rows (module docstring)."""
    U = solve_triangular(post.L_B, V_J, lower=True, check_finite=False)
    uu = np.einsum("ij,ij->j", U, U)
    mu = (V_J.T @ post.mean_w + lam_J * nu_J) / h_J
    s2 = np.maximum(lam_J / h_J + uu / h_J**2, 1e-300)
    return mu, s2, uu


def marginal_pass(prior, tau, nu, post):
    """Marginals ``(mu, s2, uu)`` of all rows under ``post`` (the posterior of ``(tau~, nu~)``)."""
    lam = prior.lam
    n = lam.size
    h = 1.0 + lam * tau
    mu, s2, uu = np.empty(n), np.empty(n), np.empty(n)
    for J, V_J in prior.columns.blocks():
        mu[J], s2[J], uu[J] = _block_marginals(V_J, lam[J], h[J], nu[J], post)
    return mu, s2, uu


def cavities(mu, s2, tau, nu):
    """Cavity means and variances, GPML eq. (3.56); rows without a cavity get ``s2_- = inf``."""
    denominator = 1.0 - tau * s2
    ok = denominator > 1e-12
    s2c = np.where(ok, s2 / np.where(ok, denominator, 1.0), np.inf)
    mc = np.where(ok, s2c * (mu / s2 - nu), mu)
    return mc, s2c, ok


def _matched_sites(mean, var, y, bias, likelihood):
    """Sites ``(tau~, nu~)`` whose product with ``N(mean, var)`` has the moments of
    ``p(y | f + b) N(f; mean, var)`` (GPML eqs. (3.58)-(3.59))."""
    precision, mean_shift, _, _ = likelihood.site_update(y, mean + bias, var)
    return precision, precision * (mean + mean_shift)


def signed(likelihood):
    """Whether EP keeps negative site precisions for ``likelihood`` (module docstring): its
    ``log_concave`` is False."""
    return not getattr(likelihood, "log_concave", True)


def signed_sites(mean, var, y, bias, likelihood, lam=0.0):
    """Moment-matched sites ``(tau~, nu~)`` of a likelihood that is not log-concave, whose
    precision may be negative (GPML eqs. (3.58)-(3.59) without the clip at 0).

    With ``alpha = d log Z / d mean`` and ``n = alpha^2 - 2 d log Z / d var`` at the cavity
    ``N(mean, var)``, the tilted variance is ``var (1 - var n)`` and the site precision
    ``tau~ = n / (1 - var n)``, negative where the tilted distribution is wider than the
    cavity (an outlier under a heavy tail). ``tau~`` is kept above ``-0.99 / var`` and, under
    FITC, above ``-0.99 / Lambda`` (:data:`_GUARD`); ``nu~ = tau~ mean + alpha (1 + tau~ var)``
    then keeps the tilted mean ``mean + var alpha`` matched exactly even where a guard binds,
    and is finite where ``n`` crosses 0 (``tau~ = 0``, ``nu~ = alpha``: a flat site that only
    moves the mean).

    Parameters
    ----------
    mean, var : ndarray of shape (k,)
        Cavity means (without the bias) and variances (positive).
    y : ndarray of shape (k,)
    bias : float or ndarray of shape (k,)
    likelihood : Likelihood
    lam : float or ndarray of shape (k,), default=0.0
        The rows' FITC variances ``Lambda`` (0 under DTC).

    Returns
    -------
    tau, nu : ndarray of shape (k,)
    """
    _, alpha, d2 = likelihood.tilted(y, mean + bias, var)
    n = alpha * alpha - 2.0 * d2
    tau = n / np.maximum(1.0 - var * n, 1e-12)
    floor = -_GUARD / var
    lam = np.broadcast_to(lam, np.shape(tau))
    floor = np.where(lam > 0.0, np.maximum(floor, -_GUARD / np.where(lam > 0.0, lam, 1.0)), floor)
    tau = np.maximum(tau, floor)
    return tau, tau * mean + alpha * (1.0 + tau * var)


def _ep_sites(mu, s2, tau, nu, y, bias, likelihood, lam=0.0):
    """EP's new sites from the marginals; a row whose cavity round-off removed keeps its site."""
    mc, s2c, ok = cavities(mu, s2, tau, nu)
    if signed(likelihood):
        new_tau, new_nu = signed_sites(mc, np.where(ok, s2c, 1.0), y, bias, likelihood, lam)
    else:
        new_tau, new_nu = _matched_sites(mc, np.where(ok, s2c, 1.0), y, bias, likelihood)
    return np.where(ok, new_tau, tau), np.where(ok, new_nu, nu)


def ep_sweep(prior, y, bias, tau, nu, post, damping, *, accumulate=True, out=None,
             likelihood=PROBIT):
    """One parallel EP sweep in one pass over ``V``.

    Parameters
    ----------
    prior, y, bias
        As :func:`~skgpsparse.inference._ep.all_rows_ep`'s.
    tau, nu : ndarray of shape (n,)
        The current sites.
    post : WeightPosterior
        The posterior of ``w`` under ``(tau, nu)``.
    damping : float
        The next sites are ``site + damping * (matched - site)``.
    accumulate : bool, default=True
        Whether to form the system of the next sites (False: the sweep is expected to be
        the last).
    out : tuple of 5 ndarrays of shape (n,), default=None
        Arrays to write ``(mu, s2, uu, new_tau, new_nu)`` into (a row partition reuses its
        last sweep's), else new ones.
    likelihood : Likelihood, default=Probit()
        ``p(y | f + b)`` (:mod:`skgpsparse.likelihoods`).

    Returns
    -------
    marginals : tuple ``(mu, s2, uu)``
        Of all rows under ``(tau, nu)``.
    matched : tuple ``(new_tau, new_nu)``
        The undamped sites moment matching gives.
    system : tuple ``(S, Va)`` or None
        ``B - I`` (lower triangle) and ``V a`` of the damped next sites.
    """
    lam = prior.lam
    p, n = prior.columns.shape
    h = 1.0 + lam * tau
    mu, s2, uu, new_tau, new_nu = out or tuple(np.empty(n) for _ in range(5))
    S, Va = _zero_system(p)
    for J, V_J in prior.columns.blocks():
        mu[J], s2[J], uu[J] = _block_marginals(V_J, lam[J], h[J], nu[J], post)
        new_tau[J], new_nu[J] = _ep_sites(
            mu[J], s2[J], tau[J], nu[J], y[J], _rows_of(bias, J), likelihood, lam[J]
        )
        if accumulate:
            t_J = tau[J] + damping * (new_tau[J] - tau[J])
            n_J = nu[J] + damping * (new_nu[J] - nu[J])
            _, g_J, a_J = effective_sites(lam[J], t_J, n_J)
            S = _accumulate(S, Va, V_J, *_weighted(prior.weights, J, g_J, a_J))
    return (mu, s2, uu), (new_tau, new_nu), ((S, Va) if accumulate else None)


def adf_block(V_J, lam_J, y_J, bias, system, post, likelihood, weights_J=None):
    """ADF sites of one block of rows under ``post``, then the block joins the system.

    Zero sites of its own, so the block's marginal is its cavity (module docstring). A row
    of weight ``c`` joins as ``c`` copies matched in the same block: each copy's site is
    matched against the posterior of the blocks before, and the row enters the system ``c``
    times (a power-``c`` ADF update). Repeated rows that fall in one block get exactly these
    sites; copies spread over blocks would see each other's sites, so the weighted ADF pass
    equals a pass over repeated rows only in that sense. EP's fixed point does not depend on
    it.

    Parameters
    ----------
    V_J : ndarray of shape (p, rows)
    lam_J, y_J : ndarray of shape (rows,)
    bias : float or ndarray of shape (rows,)
    system : tuple ``(S, Va)``
        The running ``B - I`` (lower triangle) and ``V a`` of the rows before, updated in
        place.
    post : WeightPosterior
        The posterior of ``w`` under the rows before.
    likelihood : Likelihood
    weights_J : ndarray of shape (rows,), default=None
        The rows' weights (None: one each).

    Returns
    -------
    tau, nu : ndarray of shape (rows,)
        The block's sites (of one copy).
    S : ndarray of shape (p, p)
        The system with the block's sites (``S`` of ``system``, updated).
    """
    S, Va = system
    mu, s2, _ = _block_marginals(V_J, lam_J, np.ones(V_J.shape[1]), 0.0, post)
    tau, nu = _matched_sites(mu, s2, y_J, bias, likelihood)
    _, g_J, a_J = effective_sites(lam_J, tau, nu)
    g_J, a_J = _weighted(weights_J, slice(None), g_J, a_J)
    return tau, nu, _accumulate(S, Va, V_J, g_J, a_J)


def adf_sites(prior, y, bias, rows=None, *, likelihood=PROBIT):
    """Assumed density filtering over all rows, a block of ``rows`` rows at a time.

    Each block's sites match its rows' marginals under the posterior of all previous blocks
    (zero sites of its own, so the marginal is the cavity); ``rows=1`` is the sequential ADF
    of Csato and Opper (module docstring).

    Parameters
    ----------
    prior, y, bias
        As :func:`~skgpsparse.inference._ep.all_rows_ep`'s.
    rows : int, default=None
        Rows per block; None: ``max(block_rows(p), 4 p)``.
    likelihood : Likelihood, default=Probit()

    Returns
    -------
    tau, nu : ndarray of shape (n,)
        The ADF sites.
    post : WeightPosterior
        The posterior of ``w`` under them.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.inference._ep import SparsePrior
    >>> from skgpsparse.inference._ep_passes import adf_sites
    >>> X = np.linspace(-2.0, 2.0, 40)[:, None]
    >>> y = np.where(X[:, 0] > 0.0, 1.0, -1.0)
    >>> tau, nu, post = adf_sites(SparsePrior(RBF(), X, X[::8]), y, 0.0, rows=10)
    >>> bool(np.all(tau > 0.0)), post.L_B.shape
    (True, (5, 5))
    """
    lam = prior.lam
    p, n = prior.columns.shape
    rows = rows or max(block_rows(p), _ADF_ROWS_PER_BASIS * p)
    tau, nu = np.zeros(n), np.zeros(n)
    S, Va = _zero_system(p)
    post = WeightPosterior(np.eye(p), np.zeros(p), np.zeros(p))
    for J, V_J in prior.columns.blocks(rows):
        tau[J], nu[J], S = adf_block(
            V_J, lam[J], y[J], _rows_of(bias, J), (S, Va), post, likelihood,
            None if prior.weights is None else prior.weights[J],
        )
        post = weight_posterior(S, Va)
    return tau, nu, post
