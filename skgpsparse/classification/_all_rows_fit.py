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
from ..kernels._scales import data_scaled_start, per_feature_length_scales
from ._all_rows_ep import _EP_TOL, SparsePrior, marginals, negative_log_evidence_all_rows
from ._hyperparameters import BIAS_BOUNDS, initial_bias, minimize_theta
from ._hyperprior import with_length_scale_prior
from ._prediction import BinaryPredictor

__all__ = ["AllRowsObjective", "AllRowsPredictor", "bic_charge", "fit_all_rows"]

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
        self._set_posterior(kernel, basis_vectors, sparse.L, L_B, mean_w, bias)

    @classmethod
    def from_posterior(cls, kernel, basis_vectors, L, L_B, mean_w, bias):
        """The predictor of ``q(w) = N(mean_w, (L_B L_B^T)^-1)`` (a streamed posterior)."""
        predictor = cls.__new__(cls)
        predictor._set_posterior(kernel, basis_vectors, L, L_B, mean_w, bias)
        return predictor

    def _set_posterior(self, kernel, basis_vectors, L, L_B, mean_w, bias):
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


def _learn(model, kernel, bias, sites, X, y, basis):
    """``(theta, b)`` by the all-rows evidence on a fixed basis: ``(loss, kernel, bias, sites)``.

    Per-feature length scales also carry the hyperprior of :mod:`._hyperprior` (MAP); the loss
    is then minus the log evidence and log prior per row.
    """
    objective = AllRowsObjective(kernel, X, y, X[basis], sites, tol=_SEARCH_TOL)
    target = with_length_scale_prior(objective, kernel, y.size)
    if model.optimizer is not None:
        theta0 = np.append(kernel.theta, bias)
        bounds = np.vstack([kernel.bounds.reshape(-1, 2), BIAS_BOUNDS])
        theta, _ = minimize_theta(model.optimizer, target, theta0, bounds)
        kernel, bias = kernel.clone_with_theta(theta[:-1]), float(theta[-1])
    # the sites at the kept theta (the last evaluation may have been another), refined
    objective.tol = _EP_TOL
    loss = float(target(np.append(kernel.theta, bias), eval_gradient=False))
    return loss, kernel, bias, objective.sites


def _rounds(model, kernel, bias, sites, X, y, rng, max_rounds):
    """Rounds of basis selection and ``(theta, b)`` learning from ``(kernel, bias, sites)``.

    Stops after ``max_rounds`` rounds, or when a round improves the evidence per row by less than
    ``tol``. Returns the round with the highest evidence, ``(loss, kernel, bias, basis, sites,
    exchange_curve)``, and the number of rounds.
    """
    best = None
    for it in range(max_rounds):
        tic = time.perf_counter()
        state = model._select(kernel, X, y, bias, rng)
        basis = state.basis_indices.copy()
        loss, kernel, bias, sites = _learn(model, kernel, bias, sites, X, y, basis)
        model.loss_curve_.append(loss)
        improved = best is None or loss < best[0] - model.tol
        if best is None or loss < best[0]:
            best = (loss, kernel, bias, basis, sites, model._last_exchange_curve)
        model._progress.line(
            f"iter {len(model.loss_curve_):3d}  -logZ/n {loss:.6f}  basis {state.size}  "
            f"b {bias:+.4f}  kernel {kernel}  ({time.perf_counter() - tic:.2f} s)"
        )
        if model.optimizer is None or not improved:
            break
    return best, it + 1


def bic_charge(n_extra, n):
    """The Bayesian information criterion's charge, ``n_extra / 2 * log(n)`` nats, for
    ``n_extra`` more hyperparameters fitted to ``n`` rows (Schwarz 1978)."""
    return 0.5 * n_extra * np.log(n)


def _per_feature_choice(model, best, X, y, rng, max_rounds):
    """The fitted round, or one with one length scale per feature if the evidence says so.

    The kept round's scalar length scale is copied to every feature (the same kernel, so the
    evidence can only rise); ``(theta, b)`` are learned on the kept basis (one round), and only
    if that already raises the log evidence by more than the BIC charge for the ``d - 1``
    extra hyperparameters do the rounds (re-selection included) go on with the per-feature
    kernel, whose best round must still pay the charge to be kept. Type-II maximum likelihood
    alone always prefers more length scales (on a few hundred rows they fit noise); the charge
    approximates the integral over them. At most ``max_rounds`` rounds; returns ``(round,
    number of rounds run)``.
    """
    loss, kernel, bias, basis, sites, curve = best
    ard = per_feature_length_scales(kernel, X.shape[1])
    if ard is None or max_rounds < 1:
        return best, 0
    n = y.size
    charge = bic_charge(ard.n_dims - kernel.n_dims, n)
    first = _learn(model, ard, bias, sites, X, y, basis)
    model.loss_curve_.append(first[0])
    candidate = (first[0], first[1], first[2], basis, first[3], curve)
    rounds = 1
    if n * (loss - first[0]) > charge and max_rounds > 1:
        more_best, more = _rounds(model, first[1], first[2], first[3], X, y, rng, max_rounds - 1)
        rounds += more
        if more_best[0] < candidate[0]:
            candidate = more_best
    gain = n * (loss - candidate[0])
    keep = gain > charge
    model._progress.line(
        f"one length scale per feature: log evidence and prior {gain:+.2f} nats, BIC charge "
        f"{charge:.2f}: {'kept' if keep else 'not kept'}"
    )
    return (candidate if keep else best), rounds


def fit_all_rows(model, X, y, rng):
    """The outer loop of ``_BinarySparseGPClassifier.fit`` for ``posterior="all_rows"``.

    Rounds of: greedy basis selection (ADF, the model's selector) under ``(theta, b)``; then
    ``(theta, b)`` by the all-rows EP evidence with that basis. Stops after ``max_iter`` rounds,
    or when a round improves the evidence per row by less than ``tol``; keeps the round with
    the highest evidence. With ``per_feature_choice`` (the package's default kernel) the rounds
    left then run with one length scale per feature, kept if the evidence pays the BIC charge
    (:func:`_per_feature_choice`). The sites of the kept round, one per training row, become
    ``site_precision_`` and ``site_mean_``.
    """
    kernel = clone(model.kernel)
    n = y.size
    sites = (np.zeros(n), np.zeros(n))
    if model.optimizer is not None and model.warm is None:  # a warm start keeps its kernel
        kernel = _better_start(model, kernel, X, y, rng)
    bias = model._initial_bias(kernel, X, y) + model.bias_offset
    model.loss_curve_ = []
    best, n_iter = _rounds(model, kernel, bias, sites, X, y, rng, model.max_iter)
    if model.per_feature_choice:
        # the rounds of both kernels together are at most max_iter
        best, more = _per_feature_choice(model, best, X, y, rng, model.max_iter - n_iter)
        n_iter += more
    model.n_iter_ = n_iter
    _, model.kernel_, model.bias_, model.basis_indices_, sites, curve = best
    if model.optimizer is not None:
        model.kernel_._check_bounds_params()
    model.exchange_loss_curve_ = [float(v) for v in curve]
    model.site_precision_ = sites[0]
    model.site_mean_ = np.divide(sites[1], sites[0], out=np.zeros(n), where=sites[0] > 0)
    model._train = (X, y)
    model._set_fitted_basis(X, y)
    return model
