"""EP for the likelihood of every training row under a sparse (FITC or DTC) prior.

The basis ``u`` is only the parameterisation of the prior (Naish-Guzman and Holden 2008, "The
generalized FITC approximation"; GPML §8.3.3 for the sparse priors): with ``K_uu = L L^T`` and
``V = L^-1 K_uf`` (``p x n``),

    f = V^T w + e,   w ~ N(0, I_p),   e ~ N(0, Lambda),
    Lambda = diag(K_ff - V^T V) (FITC)  or  0 (DTC / projected process),

and every row keeps a Gaussian site ``N(f_i; nu~_i / tau~_i, 1 / tau~_i)`` for its likelihood
``p(y_i | f_i + b)`` (GPML §3.6; the probit ``Phi(y_i (f_i + b))`` for the classifier, any
:class:`~skgpsparse.likelihoods.Likelihood`: EP asks it for the site updates and ``log Z``). With
``a_i = nu~_i / (1 + Lambda_i tau~_i)``, ``g_i = tau~_i / (1 + Lambda_i tau~_i)`` (finite at
``tau~_i = 0``) and ``B = I + V G V^T = L_B L_B^T``, the posterior of ``w`` is
``N(B^-1 V a, B^-1)`` and the marginals of the latents are

    mu_i  = (V_i^T B^-1 V a + Lambda_i nu~_i) / (1 + Lambda_i tau~_i),
    s2_i  = Lambda_i / (1 + Lambda_i tau~_i) + |L_B^-1 V_i|^2 / (1 + Lambda_i tau~_i)^2,

O(n p^2) for all rows, no ``n x n`` array. EP updates all sites in parallel from these marginals
(GPML eqs. (3.56)-(3.59) for each row), damped when the site changes stop shrinking. Without
starting sites, EP starts from one ADF pass over all rows (Csato and Opper's sparse online GP by
blocks of rows); each sweep is one pass over row blocks of ``V`` that gives the marginals, the new
sites and the next ``B`` (:mod:`skgpsparse.inference._ep_passes`). From the ADF start EP needs
about two sweeps fewer than from zero sites to reach the same fixed point.

The approximate evidence is GPML eq. (3.65) with ``K + S~^-1`` replaced by
``Q + Lambda + S~^-1`` (``Q = V^T V``), written without ``1 / tau~`` (the terms in ``1/tau~``
cancel as in :mod:`skgpsparse.latent.objectives._basis_evidence`)::

    log Z = -log|L_B| + 1/2 sum log((1 + s2_-i tau~_i) / (1 + Lambda_i tau~_i))
            + sum log Z_i + 1/2 |L_B^-1 V a|^2
            + sum (tau~_i mu_-i^2 - 2 mu_-i nu~_i) / (2 (1 + s2_-i tau~_i))
            + sum nu~_i^2 (Lambda_i - s2_-i) / (2 (1 + Lambda_i tau~_i) (1 + s2_-i tau~_i)).

At the EP fixed point the sites' own dependence on the hyperparameters drops out of the
gradient (GPML eq. (5.26), Seeger 2005), so with ``alpha = (Q + Lambda + S~^-1)^-1 mu~`` and
``M = alpha alpha^T - (Q + Lambda + S~^-1)^-1`` (never formed: ``M P^T``, ``P = K_uu^-1 K_uf``,
and ``diag(M)`` are O(n p^2)),

    d log Z / d theta = 1/2 tr(M dQ) + 1/2 tr(M dLambda),
    tr(M dQ) = 2 tr(P M dK_fu) - tr(P M P^T dK_uu),   dLambda = diag(dK_ff - dQ),

and ``d log Z / d b = sum_i d log Z_i / d mu_-i``, with ``log Z_i`` the log normaliser of row
``i``'s tilted distribution at its cavity ``N(mu_-i, s2_-i)`` (the likelihood's ``tilted``);
alike, in the likelihood's own log parameters (the Student-t's scale and degrees of freedom),
``d log Z / d theta_lik = sum_i d log Z_i / d theta_lik`` at the cavities (the likelihood's
``parameter_gradient``). The ``n x p`` gradient of ``K_fu`` enters only through contractions
(:func:`~skgpsparse.kernels._contraction.iter_kernel_contractions`).

Row weights (``sample_weight``, the prior's ``weights``): a row of weight ``c_i`` stands for
``c_i`` copies with equal sites (:mod:`skgpsparse.inference._ep_passes`), so every sum over rows
above is a sum over the copies: each row term of ``log Z`` counts ``c_i`` times, and so do the
rows' entries of ``diag(M)``, ``M P^T`` and ``P alpha`` in the gradient (``B`` already holds the
copies). An integer weight gives the evidence and gradient of the repeated rows; a zero weight
would give those of the row removed (the estimators drop such rows before).
"""

import numpy as np
from scipy.linalg import cho_solve, solve_triangular

from ..kernels import kernel_diag_gradient
from ..kernels._contraction import iter_kernel_contractions
from ._ep_acceleration import AndersonSites
from ._ep_passes import (
    PROBIT,
    adf_sites,
    block_rows,
    cavities,
    effective_sites,
    ep_sweep,
    marginal_pass,
    signed,
    system,
    weight_posterior,
)
from ._ep_signed import (
    proper_step,
    proper_system,
    recovered_damping,
    signed_start,
    site_change,
)
from ._row_columns import row_slices
from ._sparse_prior import SparsePrior, basis_cholesky, reusing_priors

__all__ = [
    "SparsePrior",
    "all_rows_ep",
    "basis_cholesky",
    "contract_theta_gradient",
    "evidence_of_run",
    "evidence_row_terms",
    "likelihood_gradient",
    "log_evidence_of_run",
    "marginals",
    "negative_log_evidence_all_rows",
    "reusing_priors",
    "theta_gradient_weights",
    "weight_posterior_of",
]

_EP_TOL = 1e-6
_EP_MAX_SWEEPS = 200
# Smallest damping of the parallel site updates.
_MIN_DAMPING = 0.05


def evidence_row_terms(mu, s2, tau, nu, lam, y, bias, likelihood, *, gradient=False,
                       weights=None):
    """The sums over rows of ``log Z`` (module docstring), and with ``gradient`` the rows'
    ``d log Z_i / d mu_-i`` (whose sum is ``d log Z / d b``), times ``weights`` (the rows'
    copies; None: one each).

    ``log Z`` is these sums plus ``-log|L_B| + 1/2 |L_B^-1 V a|^2``; rows held in partitions
    each add their own (:mod:`skgpsparse.inference._ep_partitioned`).
    """
    mc, s2c, ok = cavities(mu, s2, tau, nu)
    s2c = np.where(ok, s2c, 1e300)  # a site without a cavity: its row carries no information
    if gradient:
        log_z, d_mean, _ = likelihood.tilted(y, mc + bias, s2c)
    else:
        log_z, d_mean = likelihood.log_predictive(y, mc + bias, s2c), None
    e = 1.0 + s2c * tau
    h = 1.0 + lam * tau
    if weights is not None:  # each row's copies (module docstring)
        terms = (
            0.5 * np.log(e / h)
            + log_z
            + (tau * mc**2 - 2.0 * mc * nu) / (2.0 * e)
            + nu**2 * (lam - s2c) / (2.0 * h * e)
        )
        return float(terms @ weights), (None if d_mean is None else weights * d_mean)
    total = (
        0.5 * np.sum(np.log(e / h))
        + np.sum(log_z)
        + np.sum((tau * mc**2 - 2.0 * mc * nu) / (2.0 * e))
        + np.sum(nu**2 * (lam - s2c) / (2.0 * h * e))
    )
    return float(total), d_mean


def _all_row_terms(prior, mu, s2, tau, nu, y, bias, likelihood, gradient):
    """:func:`evidence_row_terms` of every row under ``prior``: at once, or by the row blocks
    of its passes where ``V`` is not held whole (a large ``n``: the temporaries of one block,
    not ten length-``n`` arrays; the same sum to rounding)."""
    if prior.columns.stored:
        return evidence_row_terms(mu, s2, tau, nu, prior.lam, y, bias, likelihood,
                                  gradient=gradient, weights=prior.weights)
    n = y.size
    total, d_mean = 0.0, (np.empty(n) if gradient else None)
    for J in row_slices(n, block_rows(prior.columns.shape[0])):
        part, d_J = evidence_row_terms(
            mu[J], s2[J], tau[J], nu[J], prior.lam[J], y[J], bias[J] if np.ndim(bias) else bias,
            likelihood, gradient=gradient,
            weights=None if prior.weights is None else prior.weights[J],
        )
        total += part
        if gradient:
            d_mean[J] = d_J
    return total, d_mean


def marginals(prior, tau, nu):
    """Posterior marginals ``(mu, s2)`` and the factors the evidence reuses (module docstring).

    The factors are ``(h, g, a, L_B, uu, Ua, mean_w)`` with ``uu_i = |L_B^-1 V_i|^2``; two passes
    over ``V`` (the system, then the marginals).
    """
    post = system(prior, tau, nu)
    mu, s2, uu = marginal_pass(prior, tau, nu, post)
    return mu, s2, _factors(prior, tau, nu, uu, post)


def _factors(prior, tau, nu, uu, post):
    h, g, a = effective_sites(prior.lam, tau, nu)
    return h, g, a, post.L_B, uu, post.Ua, post.mean_w


def all_rows_ep(
    prior, y, bias, tau=None, nu=None, *, tol=_EP_TOL, max_sweeps=_EP_MAX_SWEEPS, progress=None,
    accelerate=False, likelihood=PROBIT,
):
    """Parallel EP for the sites of all rows under ``prior`` (:class:`SparsePrior`).

    Parameters
    ----------
    prior : SparsePrior
    y : ndarray of shape (n,)
        Targets (labels in {-1, +1} for the probit).
    bias : float or ndarray of shape (n,)
        Bias ``b`` of ``p(y | f + b)``.
    tau, nu : ndarray of shape (n,), default=None
        Starting sites (natural parameters ``tau~``, ``nu~``, a warm start); if None, the sites
        of one ADF pass over all rows (:func:`~skgpsparse.inference._ep_passes.adf_sites`).
    tol, max_sweeps : float, int
        EP stops when no site parameter moves by more than ``tol`` in a sweep (relative to
        the parameter above 1 in magnitude for a signed likelihood, :mod:`._ep_signed`), or
        after ``max_sweeps`` sweeps.
    progress : Progress, default=None
        Reports the sweeps (the fit's ``verbose``).
    accelerate : bool, default=False
        Anderson acceleration of the sweeps (:mod:`skgpsparse.inference._ep_acceleration`) in place
        of damping: the same fixed point and stopping rule, in fewer sweeps.
    likelihood : Likelihood, default=Probit()
        ``p(y | f + b)`` (:mod:`skgpsparse.likelihoods`).

    Returns
    -------
    tau, nu : ndarray of shape (n,)
        The sites.
    marginals : tuple
        ``(mu, s2, factors)`` of the final sites (:func:`marginals`).
    converged : bool
    """
    memo = _converged_run(prior, y, bias, tau, nu, tol, likelihood)
    if memo is not None:
        return memo
    negative = signed(likelihood)  # sites of negative precision kept (_ep_signed)
    if tau is None:
        tau, nu, post = adf_sites(prior, y, bias, likelihood=likelihood)
    elif negative:
        tau, nu, post = signed_start(prior, tau, nu)
    else:
        tau = np.maximum(np.asarray(tau, dtype=float), 0.0)
        nu = np.where(tau > 0, np.asarray(nu, dtype=float), 0.0)
        post = system(prior, tau, nu)
    damping, last_change, previous_change = 1.0, np.inf, np.inf
    converged = False
    mixer = AndersonSites(weights=prior.weights, signed=negative) if accelerate else None
    for sweep in range(max_sweeps):
        # the sweep that will find convergence need not form the next system: skip it when
        # the geometric decrease of the changes predicts that, and form it after if wrong
        # (a SYRK pass on its own costs about what it adds to the sweep)
        # (accelerated, the next sites are not the damped ones: their system is formed apart)
        expect_last = mixer is not None or (np.isfinite(previous_change) and (
            last_change * min(last_change / previous_change, 1.0) < tol
        ))
        (mu, s2, uu), (new_tau, new_nu), next_system = ep_sweep(
            prior, y, bias, tau, nu, post, damping, accumulate=not expect_last,
            likelihood=likelihood,
        )
        change = site_change(tau, nu, new_tau, new_nu)
        # signed sites stop on the change relative to their size; the damping follows change
        settled = site_change(tau, nu, new_tau, new_nu, relative=True) if negative else change
        if progress is not None:
            progress.step(lambda: f"EP sweep {sweep + 1}: largest site change {change:.3g}")
        if settled < tol:
            converged = True
            break
        if mixer is not None and not negative:
            # the next sites mix the last sweeps; their system is formed
            tau, nu = mixer.step(tau, nu, new_tau, new_nu)
            post = system(prior, tau, nu)
            continue
        if mixer is not None:  # a mixed posterior that is not proper: a damped step instead
            mixed = mixer.step(tau, nu, new_tau, new_nu)
            mixed_post = proper_system(prior, *mixed)
            if mixed_post is not None:
                tau, nu, post = *mixed, mixed_post
                continue
            mixer.restart(tau, nu, new_tau, new_nu)
        if change > last_change:  # oscillation of the parallel updates: damp them more
            damping = max(0.5 * damping, _MIN_DAMPING)
            next_system = None  # formed with the previous damping
        previous_change, last_change = last_change, change
        if negative:  # the step halved until B stays positive definite (_ep_signed)
            tau, nu, next_post, damping = proper_step(
                prior, tau, nu, new_tau, new_nu, damping, next_system
            )
            if next_post is None:
                break
            post = next_post
            damping = recovered_damping(damping, change, previous_change)
            continue
        tau = tau + damping * (new_tau - tau)
        nu = nu + damping * (new_nu - nu)
        post = system(prior, tau, nu) if next_system is None else weight_posterior(*next_system)
    else:
        mu, s2, uu = marginal_pass(prior, tau, nu, post)
    out = tau, nu, (mu, s2, _factors(prior, tau, nu, uu, post)), converged
    if converged:
        prior._converged = (y, bias, tol, likelihood, out)
    return out


def _converged_run(prior, y, bias, tau, nu, tol, likelihood):
    """The last converged EP run on ``prior`` if it was for these labels and bias, to at least
    ``tol``, and ``(tau, nu)`` are its sites (to rounding): EP would stop after one sweep there.

    The fitted model's evidence and predictor start at the fit's final sites (``site_mean_ *
    site_precision_`` is ``nu~`` to rounding).
    """
    memo = getattr(prior, "_converged", None)
    if memo is None or tau is None:
        return None
    y_memo, bias_memo, tol_memo, likelihood_memo, out = memo
    tau_memo, nu_memo = out[0], out[1]
    same = (
        np.array_equal(bias, bias_memo)
        and likelihood_memo is likelihood
        and tol_memo <= tol
        and np.shape(tau) == tau_memo.shape
        and np.array_equal(y, y_memo)
        and np.allclose(tau, tau_memo, rtol=1e-12, atol=0.0)
        and np.allclose(nu, nu_memo, rtol=1e-12, atol=1e-300)
    )
    return out if same else None


def weight_posterior_of(prior, tau, nu):
    """``(L_B, Ua, mean_w)`` of the sites, from the last converged EP run if it had them."""
    memo = getattr(prior, "_converged", None)
    if memo is not None:
        out = memo[-1]
        if np.shape(tau) == out[0].shape and np.allclose(tau, out[0], rtol=1e-12, atol=0.0):
            if np.allclose(nu, out[1], rtol=1e-12, atol=1e-300):
                factors = out[2][2]
                return factors[3], factors[5], factors[6]
    return system(prior, tau, nu)


def negative_log_evidence_all_rows(
    prior, y, bias, tau=None, nu=None, *, eval_gradient=False, tol=_EP_TOL, progress=None,
    accelerate=False, contract=True, likelihood=PROBIT,
):
    """Minus the EP log marginal likelihood of all labels under the sparse prior, and gradient.

    Parameters
    ----------
    prior : SparsePrior
        The prior's factors under the kernel at which the evidence is evaluated; the gradient is
        with respect to ``prior.kernel.theta`` (log space) and ``b``.
    y : ndarray of shape (n,)
        Targets (labels in {-1, +1} for the probit).
    bias : float
    tau, nu : ndarray of shape (n,), default=None
        Starting sites of EP (a warm start); zeros if None.
    eval_gradient : bool, default=False
    tol : float
        EP's tolerance on the site parameters.
    progress : Progress, default=None
        Reports EP's sweeps.
    accelerate : bool, default=False
        Anderson acceleration of EP (:func:`all_rows_ep`).
    contract : bool, default=True
        With ``eval_gradient``: False returns, in place of ``grad``, the gradient with respect
        to ``b`` and the weights whose contraction (:func:`contract_theta_gradient`) is the
        theta part of ``-grad`` (its sign flipped: it is ``d log Z / d theta``).
    likelihood : Likelihood, default=Probit()
        ``p(y | f + b)`` (:mod:`skgpsparse.likelihoods`).

    Returns
    -------
    value : float
        ``-log Z_EP``.
    grad : ndarray of shape (n_theta + k + 1,)
        Only if ``eval_gradient``: with respect to ``[theta..., theta_lik..., b]``, with
        ``theta_lik`` the likelihood's ``k`` free log parameters (:func:`likelihood_gradient`;
        none for the probit).
    sites : tuple ``(tau, nu)``
        The EP sites (to warm-start the next call).
    """
    run = all_rows_ep(
        prior, y, bias, tau, nu, tol=tol, progress=progress, accelerate=accelerate,
        likelihood=likelihood,
    )
    return evidence_of_run(prior, y, bias, run, eval_gradient=eval_gradient, contract=contract,
                           likelihood=likelihood)


def evidence_of_run(prior, y, bias, run, *, eval_gradient=False, contract=True,
                    likelihood=PROBIT):
    """:func:`negative_log_evidence_all_rows`'s outputs from its EP run ``run`` (what
    :func:`all_rows_ep` returned for ``prior, y, bias``)."""
    tau, nu, (mu, s2, factors), _ = run
    h, g, a, L_B, uu, Ua, mean_w = factors
    log_z, d_mean = log_evidence_of_run(prior, y, bias, run, gradient=eval_gradient,
                                        likelihood=likelihood)
    if not eval_gradient:
        return float(-log_z), (tau, nu)
    grad_b = np.sum(d_mean)
    weights = theta_gradient_weights(prior, g, a, L_B, uu, mean_w)
    if not contract:
        return float(-log_z), -grad_b, weights, (tau, nu)
    grad_theta = contract_theta_gradient(prior, *weights)
    grad_likelihood = likelihood_gradient(mu, s2, tau, nu, y, bias, likelihood, prior.weights)
    return float(-log_z), -np.concatenate([grad_theta, grad_likelihood, [grad_b]]), (tau, nu)


def log_evidence_of_run(prior, y, bias, run, *, gradient=False, likelihood=PROBIT):
    """``log Z`` (module docstring) of the EP run ``run`` (:func:`all_rows_ep`'s output), and
    with ``gradient`` the rows' ``d log Z_i / d mu_-i`` (:func:`evidence_row_terms`)."""
    tau, nu, (mu, s2, factors), _ = run
    L_B, Ua = factors[3], factors[5]
    rows_sum, d_mean = _all_row_terms(prior, mu, s2, tau, nu, y, bias, likelihood, gradient)
    return -np.sum(np.log(np.diag(L_B))) + 0.5 * Ua @ Ua + rows_sum, d_mean


def likelihood_gradient(mu, s2, tau, nu, y, bias, likelihood, weights=None):
    """``d log Z / d theta_lik``: the sum over rows (times ``weights``) of the likelihood's
    :meth:`~skgpsparse.likelihoods.Likelihood.parameter_gradient` at the rows' cavities.

    ``theta_lik`` enters the evidence (module docstring) only through the rows' ``log Z_i``,
    and at EP's fixed point the sites' own dependence drops out (GPML eq. (5.26)), so this is
    the explicit derivative; an empty array for a likelihood without free parameters (Probit,
    Poisson: no quadrature is run).
    """
    k = likelihood.theta.size
    if not k:
        return np.empty(0)
    mc, s2c, ok = cavities(mu, s2, tau, nu)  # a row without a cavity carries no information
    b = np.broadcast_to(bias, np.shape(y))
    rows = likelihood.parameter_gradient(y[ok], mc[ok] + b[ok], s2c[ok]).reshape(-1, k)
    return rows.sum(axis=0) if weights is None else weights[ok] @ rows


def theta_gradient_weights(prior, g, a, L_B, uu, mean_w):
    """``(diag(M), M P^T, P M P^T)`` of ``d log Z / d theta`` (module docstring), O(n p^2).

    The gradient (:func:`contract_theta_gradient`) is linear in them, so a sum of evidences
    under one prior (the shared one-vs-rest fit's classes) contracts their sum once.
    ``M P^T`` (``n x p``) is formed a block of rows at a time with ``P^T = V^T L^-1`` and
    ``V G P^T = (B - I) L^-1`` (``B = I + V G V^T``), so ``V^T B^-1 V G P^T = V^T W`` with
    ``W = (I - B^-1) L^-1``, a ``p x p`` matrix: one product per block and no ``p x n`` ``P``.
    """
    L, columns, c = prior.L, prior.columns, prior.weights
    p, n = columns.shape
    # alpha = (Q + Lambda + S~^-1)^-1 mu~ = a - G V^T B^-1 V a
    alpha = a - g * columns.rdot(mean_w)
    L_inv = solve_triangular(L, np.eye(p), lower=True, check_finite=False)
    P_alpha = L_inv.T @ columns.dot(alpha if c is None else c * alpha)  # over the copies
    W = L_inv - cho_solve((L_B, True), L_inv, check_finite=False)
    right = np.hstack([W, L_inv])
    # diag(M) and M P^T with M = alpha alpha^T - G + G V^T B^-1 V G
    diag_M = alpha**2 - g + g**2 * uu  # uu = diag(V^T B^-1 V)
    # FITC: M' = M - diag(M) in M P^T, as dLambda takes the diagonal
    shift = g + diag_M if prior.prior == "fitc" else g
    MPt = np.empty((n, p))
    VMPt = np.zeros((p, p))
    for J, V_J in columns.blocks(block_rows(p)):
        both = V_J.T @ right  # [V^T W, P^T] of the block
        block = MPt[J]
        np.multiply(both[:, :p], g[J, None], out=block)
        block -= shift[J, None] * both[:, p:]
        block += np.outer(alpha[J], P_alpha)
        if c is not None:  # the rows' copies: c_i equal rows of M P^T each
            block *= c[J, None]
        VMPt += V_J @ block
    if c is not None:
        diag_M = c * diag_M
    return diag_M, MPt, L_inv.T @ VMPt  # P M P^T


def contract_theta_gradient(prior, diag_M, MPt, PMPt):
    """``d log Z / d theta`` from :func:`theta_gradient_weights` (module docstring)."""
    kernel, X, X_u = prior.kernel, prior.X, prior.X_u
    grad = np.zeros(kernel.n_dims)
    if prior.prior == "fitc":
        _, d_diag = kernel_diag_gradient(kernel, X)
        grad += 0.5 * diag_M @ d_diag
    _, dK_uu = kernel(X_u, eval_gradient=True)
    grad -= 0.5 * np.einsum("jk,jkt->t", PMPt, dK_uu)
    for rows, _, contract in iter_kernel_contractions(kernel, X, X_u):
        grad += contract(MPt[rows])
    return grad
