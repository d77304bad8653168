"""EP of ``K`` label vectors under one sparse prior, the ``K`` runs batched in one set of array
operations per sweep.

The shared multi-class learning (:mod:`skgpsparse.classification.multiclass._shared_learning`)
evaluates at every kernel ``theta`` the EP evidence of ``K`` one-vs-rest problems under one
:class:`~skgpsparse.inference._sparse_prior.SparsePrior`: the same ``V = L^-1 K_uf`` and
``Lambda`` (notation of :mod:`skgpsparse.inference._ep`), each class ``k`` with its own labels,
bias and sites, so its own ``B_k = I + V G_k V^T``. Run one class after another
(:func:`~skgpsparse.inference._ep.all_rows_ep`), each sweep of each class is a handful of small
calls (a triangular solve of ``V``, the site update of ``n`` rows, the Anderson step, a SYRK
and a Cholesky factor), and on pmlb letter (26 classes, 1,000 rows, ``p = 100``) the
per-call costs were as large as the arithmetic.

:func:`batched_ep` runs the ``K`` accelerated EP runs side by side and gives each class exactly
the run :func:`~skgpsparse.inference._ep.all_rows_ep` gives it (``accelerate=True``): the same
iterates, the same stopping sweep, the same outputs, to rounding. Per sweep, for the classes not
yet converged:

- the marginals of all of them: the means from one product ``[mean_w1 ... mean_wK]^T V``,
  the variances from ``uu_ki = |L_Bk^-1 v_i|^2`` (a triangular solve of ``V`` per class;
  module docstring of :mod:`skgpsparse.inference._ep_passes`);
- the new sites of every (class, row) in one call of the likelihood's ``site_update``;
- the largest site change per class, then each class's own Anderson step
  (:class:`~skgpsparse.inference._ep_acceleration.AndersonSites`) and its system
  (:func:`~skgpsparse.inference._ep_passes.system`: one SYRK pass and its Cholesky factor).

:func:`negative_log_evidences` then gives each class's ``-log Z_k`` and ``d / d b_k``, and the
gradient weights of ``sum_k log Z_k`` in ``theta`` summed over the classes, formed once
(:func:`summed_theta_gradient_weights`), for one contraction with the kernel's derivatives
(:func:`~skgpsparse.inference._ep.contract_theta_gradient`).

A likelihood with signed sites (not log-concave) and runs started without sites (ADF) take
the one-class engine, class after class.
"""

import numpy as np
from scipy.linalg import solve_triangular
from scipy.linalg.lapack import dpotri

from ..kernels._gradients import row_blocks
from ._ep import (
    _EP_MAX_SWEEPS,
    _EP_TOL,
    _converged_run,
    _factors,
    all_rows_ep,
    log_evidence_of_run,
)
from ._ep_acceleration import AndersonSites
from ._ep_passes import PROBIT, _ep_sites, block_rows, marginal_pass, signed, system
from ._row_columns import row_slices

__all__ = [
    "batched_ep", "batched_marginals", "negative_log_evidences", "summed_theta_gradient_weights",
]

# Entries of the n_J x K p block of rows g_ki v_i in the summed gradient weights (16 MiB).
_STACK_ENTRIES = 1 << 21


def _stack_rows(n_classes, p):
    """Rows per block of the summed gradient weights' stacked product."""
    return max(16, _STACK_ENTRIES // max(n_classes * p, 1))


def batched_marginals(prior, tau, nu, posts):
    """``(mu, s2, uu)`` of ``K`` classes' sites under their posteriors, each ``(K, n)``.

    Class ``k``'s rows are :func:`~skgpsparse.inference._ep_passes.marginal_pass`'s of
    ``(tau[k], nu[k], posts[k])``, to rounding.

    Parameters
    ----------
    prior : SparsePrior
    tau, nu : ndarray of shape (K, n)
        The classes' sites.
    posts : list of WeightPosterior
        The posterior of ``w`` under each class's sites.
    """
    V, lam = prior.V, prior.lam
    mean_w = np.stack([post.mean_w for post in posts])
    h = 1.0 + lam * tau
    mu = (mean_w @ V + lam * nu) / h
    # |L_Bk^-1 v_i|^2: one triangular solve of V per class (a stacked GEMM with the inverse
    # factors, twice the flops, took as long)
    uu = np.empty_like(mu)
    for J in row_slices(V.shape[1], block_rows(V.shape[0])):
        for k, post in enumerate(posts):
            U = solve_triangular(post.L_B, V[:, J], lower=True, check_finite=False)
            uu[k, J] = np.einsum("ij,ij->j", U, U)
    s2 = np.maximum(lam / h + uu / h**2, 1e-300)
    return mu, s2, uu


def batched_ep(prior, Y, biases, sites, *, tol=_EP_TOL, max_sweeps=_EP_MAX_SWEEPS,
               likelihood=PROBIT):
    """Accelerated parallel EP for ``K`` label vectors under one prior, batched over classes.

    Parameters
    ----------
    prior : SparsePrior
    Y : ndarray of shape (K, n)
        Each class's targets (labels in {-1, +1} for the probit).
    biases : array-like of shape (K,)
        Each class's bias ``b_k``.
    sites : list of K tuples ``(tau, nu)``
        Each class's starting sites (a warm start; ``None`` entries: the ADF start).
    tol, max_sweeps : float, int
        As :func:`~skgpsparse.inference._ep.all_rows_ep`'s, for each class.
    likelihood : Likelihood, default=Probit()

    Returns
    -------
    runs : list of K tuples
        Class ``k``'s ``all_rows_ep(prior, Y[k], biases[k], *sites[k], tol=tol,
        max_sweeps=max_sweeps, accelerate=True, likelihood=likelihood)``, to rounding; the
        prior keeps the last converged run as that loop leaves it.
    """
    K = Y.shape[0]
    biases = [float(b) for b in biases]
    if signed(likelihood) or any(tau is None for tau, _ in sites):
        return [all_rows_ep(prior, Y[k], biases[k], *sites[k], tol=tol, max_sweeps=max_sweeps,
                            accelerate=True, likelihood=likelihood) for k in range(K)]
    runs = [_converged_run(prior, Y[k], biases[k], *sites[k], tol, likelihood)
            for k in range(K)]
    active = [k for k in range(K) if runs[k] is None]
    n = Y.shape[1]
    tau, nu = np.zeros((K, n)), np.zeros((K, n))
    posts, mixers = [None] * K, [None] * K
    for k in active:  # all_rows_ep's warm start: sites of negative precision dropped
        tau[k] = np.maximum(np.asarray(sites[k][0], dtype=float), 0.0)
        nu[k] = np.where(tau[k] > 0, np.asarray(sites[k][1], dtype=float), 0.0)
        posts[k] = system(prior, tau[k], nu[k])
        mixers[k] = AndersonSites(weights=prior.weights)
    b = np.asarray(biases)[:, None]
    for _ in range(max_sweeps):
        if not active:
            break
        mu, s2, uu = batched_marginals(prior, tau[active], nu[active], [posts[k] for k in active])
        new_tau, new_nu = _ep_sites(mu, s2, tau[active], nu[active], Y[active], b[active],
                                    likelihood, prior.lam)
        change_tau = np.max(np.abs(new_tau - tau[active]), axis=1)
        change_nu = np.max(np.abs(new_nu - nu[active]), axis=1)
        still = []
        for i, k in enumerate(active):
            if max(change_tau[i], change_nu[i], 0.0) < tol:
                runs[k] = _finish(prior, Y[k], biases[k], tau[k], nu[k], posts[k],
                                  (mu[i], s2[i], uu[i]), True, tol, likelihood)
                continue
            tau[k], nu[k] = mixers[k].step(tau[k], nu[k], new_tau[i], new_nu[i])
            posts[k] = system(prior, tau[k], nu[k])
            still.append(k)
        active = still
    for k in active:  # max_sweeps without convergence
        marginal = marginal_pass(prior, tau[k], nu[k], posts[k])
        runs[k] = _finish(prior, Y[k], biases[k], tau[k], nu[k], posts[k], marginal, False, tol,
                          likelihood)
    # the prior keeps the last converged run of the class order (as the loop leaves it)
    for k in reversed(range(K)):
        if runs[k][3]:
            prior._converged = (Y[k], biases[k], tol, likelihood, runs[k])
            break
    return runs


def _finish(prior, y, bias, tau, nu, post, marginal, converged, tol, likelihood):
    """A class's run as :func:`~skgpsparse.inference._ep.all_rows_ep` returns it."""
    tau, nu = tau.copy(), nu.copy()
    mu, s2, uu = marginal
    return tau, nu, (mu, s2, _factors(prior, tau, nu, uu, post)), converged


def negative_log_evidences(prior, Y, biases, sites, *, eval_gradient=False, tol=_EP_TOL,
                           likelihood=PROBIT):
    """Each class's minus EP log evidence under one prior, by :func:`batched_ep`.

    Parameters
    ----------
    prior, Y, biases, sites, tol, likelihood
        As :func:`batched_ep`'s.
    eval_gradient : bool, default=False
        Whether to return the gradients.

    Returns
    -------
    values : ndarray of shape (K,)
        ``-log Z_k``, each as :func:`~skgpsparse.inference._ep.negative_log_evidence_all_rows`
        gives it.
    grad_b : ndarray of shape (K,)
        Only if ``eval_gradient``: ``-d log Z_k / d b_k``.
    weights : tuple
        Only if ``eval_gradient``: the gradient weights ``(diag(M), M P^T, P M P^T)`` of
        ``sum_k log Z_k`` in ``theta``, summed over the classes
        (:func:`~skgpsparse.inference._ep.theta_gradient_weights`), whose contraction
        (:func:`~skgpsparse.inference._ep.contract_theta_gradient`) is ``sum_k d log Z_k / d
        theta``.
    sites : list of K tuples ``(tau, nu)``
        The classes' EP sites (to warm-start the next call).
    """
    runs = batched_ep(prior, Y, biases, sites, tol=tol, likelihood=likelihood)
    outs = [log_evidence_of_run(prior, Y[k], float(biases[k]), run, gradient=eval_gradient,
                                likelihood=likelihood)
            for k, run in enumerate(runs)]
    values = np.array([-log_z for log_z, _ in outs])
    new_sites = [(run[0], run[1]) for run in runs]
    if not eval_gradient:
        return values, new_sites
    grad_b = np.array([-np.sum(d_mean) for _, d_mean in outs])
    return values, grad_b, summed_theta_gradient_weights(prior, runs), new_sites


def summed_theta_gradient_weights(prior, runs):
    """The sum over ``K`` EP runs under one prior of their gradient weights ``(diag(M_k),
    M_k P^T, P M_k P^T)`` (:func:`~skgpsparse.inference._ep.theta_gradient_weights`), formed
    once for all classes.

    Class ``k``'s ``M_k P^T`` (``P^T = V^T L^-1``, ``W_k = (I - B_k^-1) L^-1``) is, row ``i``
    times its weight ``c_i``,
    ``g_ki v_i^T W_k - s_ki v_i^T L^-1 + alpha_ki (P c alpha_k)^T`` with ``s_k = g_k`` (DTC)
    or ``g_k + diag(M_k)`` (FITC), so the sum over classes is

        sum_k M_k P^T = c [ (sum_k (g_k - s_k)) V^T L^-1 - R L^-1 + A^T (P c A^T)^T ],
        R = sum_k g_k (V^T B_k^-1)   (row i: sum_k g_ki v_i^T B_k^-1),

    ``A`` the ``K x n`` matrix of the ``alpha_k``. ``R`` is one ``n x K p`` by ``K p x p``
    product (rows ``g_ki v_i`` against the stacked ``B_k^-1``), the products with ``V^T L^-1``
    and the ``P M P^T = L^-T V (M P^T)`` are formed once: a third of the per-class weights'
    flops.

    Parameters
    ----------
    prior : SparsePrior
    runs : list of tuples
        :func:`~skgpsparse.inference._ep.all_rows_ep`'s outputs (or :func:`batched_ep`'s).

    Returns
    -------
    diag_M : ndarray of shape (n,)
    MPt : ndarray of shape (n, p)
    PMPt : ndarray of shape (p, p)
    """
    X, L, V, c = prior.X, prior.L, prior.V, prior.weights
    p, n = V.shape
    K = len(runs)
    L_inv = solve_triangular(L, np.eye(p), lower=True, check_finite=False)
    alpha, g, diag_M = np.empty((K, n)), np.empty((K, n)), np.zeros(n)
    B_inv = np.empty((K * p, p))
    shift = np.zeros(n)
    for k, (_, _, (_, _, factors), _) in enumerate(runs):
        _, g[k], a, L_B, uu, _, mean_w = factors
        # alpha = (Q + Lambda + S~^-1)^-1 mu~ = a - G V^T B^-1 V a
        alpha[k] = a - g[k] * (V.T @ mean_w)
        diag_k = alpha[k] ** 2 - g[k] + g[k] ** 2 * uu  # diag(M_k)
        diag_M += diag_k
        shift += g[k] + diag_k if prior.prior == "fitc" else g[k]
        inverse, info = dpotri(L_B, lower=1)
        if info != 0:
            raise np.linalg.LinAlgError("EP's system B is singular.")
        B_inv[k * p:(k + 1) * p] = np.tril(inverse) + np.tril(inverse, -1).T
    P_alpha = L_inv.T @ (V @ (alpha if c is None else c * alpha).T)  # p x K, over the copies
    MPt = np.empty((n, p))
    for J in row_blocks(X, _stack_rows(K, p)):
        rows = g[:, J].T[:, :, None] * V[:, J].T[:, None, :]  # g_ki v_i, n_J x K x p
        block = (np.sum(g[:, J], axis=0) - shift[J])[:, None] * V[:, J].T
        block -= rows.reshape(-1, K * p) @ B_inv
        block = block @ L_inv
        block += alpha[:, J].T @ P_alpha.T
        MPt[J] = block
    if c is not None:  # the rows' copies (theta_gradient_weights)
        MPt *= c[:, None]
        diag_M = c * diag_M
    return diag_M, MPt, L_inv.T @ (V @ MPt)
