"""``posterior="all_rows"``: the greedy basis as inducing set, EP over every row's likelihood.

The ADF posterior of the validation paper keeps the likelihood terms of the basis rows only
(as the IVM), so which rows enter the basis moves the probabilities. Here the basis selected
by the classifier's greedy selection is only the parameterisation of a sparse (FITC) prior,
and EP (:mod:`._all_rows_ep`) matches the probit likelihood of every training row, as SVGP or
the generalized FITC classifier of Naish-Guzman and Holden (2008) do. The hyperparameters
``(theta, b)`` maximise the EP evidence of all labels (GPML eq. (3.65) under the sparse prior)
with the basis fixed, EP warm-started from the sites of the previous evaluation (the sites
belong to rows, not to the basis, so they carry over from one basis to the next). Rounds of
basis selection under the current ``(theta, b)`` and hyperparameter learning alternate until
the evidence per row stops improving by ``tol``; the round with the highest evidence is kept.
"""

import time

import numpy as np
from scipy.linalg import cho_solve, eigh, solve_triangular
from sklearn.base import clone

from ..kernels._columns import CrossKernel
from ..kernels._scales import data_scaled_start
from ._all_rows_ep import _EP_TOL, SparsePrior, marginals, negative_log_evidence_all_rows
from ._hyperparameters import BIAS_BOUNDS, initial_bias, minimize_theta
from ._prediction import BinaryPredictor

__all__ = ["AllRowsObjective", "AllRowsPredictor", "fit_all_rows"]

# The sparse prior of the all-rows posterior (FITC keeps each row's own prior variance).
PRIOR = "fitc"
# EP's tolerance on the sites while the optimiser searches (the evidence is stationary in the
# sites, so its error is second order in theirs); the kept theta's sites are then refined.
_SEARCH_TOL = 1e-3


class AllRowsObjective:
    """``obj_func(theta_and_b, eval_gradient=True)``: ``-log Z_EP`` of all labels, per row.

    Divided by ``n`` so that the optimiser's tolerances do not depend on the data size. EP is
    warm-started from the sites of the previous finite evaluation.
    """

    def __init__(self, kernel, X, y, X_u, sites, prior=PRIOR, tol=_EP_TOL):
        self.kernel, self.X, self.y, self.X_u, self.prior = kernel, X, y, X_u, prior
        self.sites, self.tol = sites, tol

    def __call__(self, theta, eval_gradient=True):
        kernel = self.kernel.clone_with_theta(theta[:-1])
        n = self.y.size
        try:
            prior = SparsePrior(kernel, self.X, self.X_u, self.prior)
            out = negative_log_evidence_all_rows(
                prior, self.y, theta[-1], *self.sites, eval_gradient=eval_gradient, tol=self.tol
            )
        except (np.linalg.LinAlgError, ValueError, FloatingPointError):
            out = None
        if out is None or not np.isfinite(out[0]) or not np.all(np.isfinite(out[-1][0])):
            value = np.finfo(float).max / 1e10  # keep the line search away, never a NaN
            return (value, np.zeros(theta.shape)) if eval_gradient else value
        self.sites = out[-1]
        if not eval_gradient:
            return out[0] / n
        if not np.all(np.isfinite(out[1])):
            return np.finfo(float).max / 1e10, np.zeros(theta.shape)
        return out[0] / n, out[1] / n


class AllRowsPredictor(BinaryPredictor):
    """Prediction from the Gaussian posterior of the latents at the basis.

    With ``q(w) = N(m_w, B^-1)`` and ``u = L w`` (``K_uu = L L^T``), the latent at ``x_*`` has
    mean ``k_*u L^-T m_w`` and variance ``k_** - k_*u L^-T (I - B^-1) L^-1 k_u*`` (the FITC /
    projected-process predictive, GPML eq. (8.27) with EP's sites in place of the noise). The
    PSD matrix ``L^-T (I - B^-1) L^-1 = W^T W`` is factored once (eigh), so that a prediction
    block is one GEMM against ``[w, W^T]`` as in :class:`BinaryPredictor`.
    """

    def __init__(self, kernel, basis_vectors, X, y, tau, nu, bias, prior=PRIOR):
        sparse = SparsePrior(kernel, X, basis_vectors, prior)
        _, _, (_, _, _, L_B, _, _, mean_w) = marginals(sparse, tau, nu)
        L = sparse.L
        p = L.shape[0]
        w = solve_triangular(L, mean_w, lower=True, trans="T")
        B_inv = cho_solve((L_B, True), np.eye(p))
        L_inv = solve_triangular(L, np.eye(p), lower=True)
        C = L_inv.T @ (np.eye(p) - B_inv) @ L_inv
        values, vectors = eigh(0.5 * (C + C.T))
        W = np.sqrt(np.maximum(values, 0.0))[:, None] * vectors.T
        self.projection = np.ascontiguousarray(np.column_stack([w, W.T]))
        self.bias = bias
        self.cross = CrossKernel(kernel, basis_vectors)


def _start_evidence(model, kernel, X, y, rng):
    """``-log Z_EP / n`` at ``kernel`` and its class-balance bias, on a basis selected there."""
    bias = initial_bias(kernel, X, y) + model.bias_offset
    basis = model._select(kernel, X, y, bias, rng).basis_indices.copy()
    n = y.size
    objective = AllRowsObjective(kernel, X, y, X[basis], (np.zeros(n), np.zeros(n)))
    return float(objective(np.append(kernel.theta, bias), eval_gradient=False))


def _better_start(model, kernel, X, y, rng):
    """The user's kernel, or the same with its length scales at the data's scale
    (:func:`~skgpsparse.kernels._scales.data_scaled_start`), whichever has the higher evidence.

    From length scales far below the distances between rows (``RBF(1.0)`` on many features)
    the evidence can stay in a local optimum where rows barely correlate; the evidence of
    the two starts, each on a basis selected under it, decides (not the test data).
    """
    other = data_scaled_start(kernel, X)
    if other is None:
        return kernel
    mine = _start_evidence(model, kernel, X, y, rng)
    theirs = _start_evidence(model, other, X, y, rng)
    model._progress.line(
        f"start: -logZ/n {mine:.6f} at {kernel}, {theirs:.6f} at {other} (data's scale)"
    )
    return other if theirs < mine else kernel


def fit_all_rows(model, X, y, rng):
    """The outer loop of ``_BinarySparseGPClassifier.fit`` for ``posterior="all_rows"``.

    Rounds of: greedy basis selection (ADF, the model's selector) under ``(theta, b)``; then
    ``(theta, b)`` by the all-rows EP evidence with that basis. Stops after ``max_iter`` rounds,
    or when a round improves the evidence per row by less than ``tol``; keeps the round with
    the highest evidence. The sites of the kept round, one per training row, become
    ``site_precision_`` and ``site_mean_``.
    """
    kernel = clone(model.kernel)
    n = y.size
    sites = (np.zeros(n), np.zeros(n))
    if model.optimizer is not None:
        kernel = _better_start(model, kernel, X, y, rng)
    bias = initial_bias(kernel, X, y) + model.bias_offset
    model.loss_curve_ = []
    best = None
    for it in range(model.max_iter):
        tic = time.perf_counter()
        state = model._select(kernel, X, y, bias, rng)
        basis = state.basis_indices.copy()
        objective = AllRowsObjective(kernel, X, y, X[basis], sites, tol=_SEARCH_TOL)
        theta0 = np.append(kernel.theta, bias)
        if model.optimizer is not None:
            bounds = np.vstack([kernel.bounds.reshape(-1, 2), BIAS_BOUNDS])
            theta, loss = minimize_theta(model.optimizer, objective, theta0, bounds)
            kernel, bias = kernel.clone_with_theta(theta[:-1]), float(theta[-1])
        # the sites at the kept theta (the last evaluation may have been another), refined
        objective.tol = _EP_TOL
        loss = float(objective(np.append(kernel.theta, bias), eval_gradient=False))
        sites = objective.sites
        model.loss_curve_.append(float(loss))
        improved = best is None or loss < best[0] - model.tol
        if best is None or loss < best[0]:
            best = (loss, kernel, bias, basis, sites, model._last_exchange_curve)
        model._progress.line(
            f"iter {it + 1:3d}  -logZ/n {loss:.6f}  basis {state.size}  b {bias:+.4f}"
            f"  kernel {kernel}  ({time.perf_counter() - tic:.2f} s)"
        )
        if model.optimizer is None or not improved:
            break
    model.n_iter_ = it + 1
    _, model.kernel_, model.bias_, model.basis_indices_, sites, curve = best
    if model.optimizer is not None:
        model.kernel_._check_bounds_params()
    model.exchange_loss_curve_ = [float(v) for v in curve]
    model.site_precision_ = sites[0]
    model.site_mean_ = np.divide(sites[1], sites[0], out=np.zeros(n), where=sites[0] > 0)
    model._train = (X, y)
    model._set_fitted_basis(X, y)
    return model
