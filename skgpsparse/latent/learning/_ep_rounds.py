"""``posterior="all_rows"``: the greedy basis as inducing set, EP over every row's likelihood.

The ADF posterior of the validation paper keeps the likelihood terms of the basis rows only (as the
IVM), so which rows enter the basis moves the probabilities. Here the basis selected by the
classifier's greedy selection is only the parameterisation of a sparse (FITC) prior, and EP
(:mod:`skgpsparse.inference._ep`) matches the probit likelihood of every training row, as SVGP or
the generalized FITC classifier of Naish-Guzman and Holden (2008) do. The hyperparameters
``(theta, b)`` maximise the EP evidence of all labels (GPML eq. (3.65) under the sparse prior) with
the basis fixed, EP warm-started from the sites of the previous evaluation (the sites belong to
rows, not to the basis, so they carry over from one basis to the next) and, while learning, its
sweeps Anderson-accelerated (:mod:`skgpsparse.inference._ep_acceleration`). Rounds of basis
selection under the current ``(theta, b)`` and hyperparameter learning alternate until the evidence
per row stops improving by ``tol``; the round with the highest evidence is kept.
"""

import time

import numpy as np
from sklearn.base import clone
from sklearn.utils.optimize import _check_optimize_result

from ..._learning_rows import learning_subsample, with_basis_rows
from ..._optimize import StepResolution
from ..._row_weights import total_weight, weighted_std
from ...inference._ep import _EP_TOL
from ...inference._sparse_prior import reusing_priors
from ...kernels._scales import (
    bic_charge,
    data_scaled_start,
    per_feature_length_scales,
    rows_uncorrelated,
)
from ..objectives._ep_evidence import AllRowsObjective, joint_theta, split_theta
from ..objectives._hyperprior import with_length_scale_prior
from ._basis_size import grown_rounds
from ._charge_bound import ChargeStop
from ._hyperparameters import (
    BIAS_BOUNDS,
    OPTIMIZER_MAXITER,
    check_bounds,
    initial_bias,
    minimize_theta,
)
from ._refine import refine_basis

__all__ = ["bic_charge", "fit_all_rows", "round_bounds"]

# EP's tolerance on the sites while the optimiser searches (the evidence is stationary in the
# sites, so its error is second order in theirs); the kept theta's sites are then refined.
# Looser (3e-3, 1e-2) halved the learning's sweeps but ended on pmlb adult in another optimum
# (test NLP 0.317-0.318 against 0.310-0.312; benchmarks/README.md, "Anderson-accelerated EP").
_SEARCH_TOL = 1e-3
# The final L-BFGS-B run on the kept basis (_converged): its iterations, and its tolerance on
# the projected gradient of minus the log evidence per row (1e-5 n in total).
_POLISH_MAXITER = 200
_POLISH_GTOL = 1e-5
# L-BFGS-B's runs end at a step below this, each log hyperparameter and the bias in standard
# deviations of the prior latent (_units): closer points differ in the evidence below EP's
# tolerance, and the line search probed up to 20 of them, a full EP run each (twonorm: 10 of
# a round's 16 evaluations; session 23 in benchmarks/README.md, "History").
_STEP_TOL = 1e-4
# Each round's (theta, b) search after the fit's first stays within a box around the round's
# start (a trust region): every log hyperparameter within _ROUND_STEP of its start (a factor
# e^3 = 20), the bias within _ROUND_STEP of the prior latent's standard deviations. Unboxed,
# L-BFGS-B restarted on a new basis extrapolated from its curvature estimate to steps of
# 10-1000 in theta (pmlb adult: a third of the per-feature rounds' evaluations, each a full EP
# from far sites, all rejected); the rounds after it go on from the box's edge when the
# optimum lies beyond. The first round starts from the user's kernel, which may be far from
# the optimum (boxed, it took more evaluations on adult), and is not boxed.
_ROUND_STEP = 3.0
# The rounds also stop when the next round's gain, predicted from the last two (geometric
# decrease, g_k^2 / g_(k-1)), is below ``tol``: the round that would only confirm the stop
# is not run (pmlb adult, 40,000 rows: on 2 of 3 seeds, at a test NLP 2e-4 - 4e-4 lower;
# session 23 in benchmarks/README.md, "History").
PREDICT_GAIN = True
# The per-feature trial's charge: this times the BIC's, (d - 1) / 2 log n nats. The full BIC's
# was set on the small Raetsch sets (a few hundred rows, where per-feature length scales made
# the test NLP worse) before the length scales carried their hyperprior; it also rejected them
# where they pay: pmlb connect-4's shared fit (test NLP 0.770 against 0.826, one split of
# three) and the count set doctorvisits (Poisson deviance 0.827 / 0.871 / 0.753 against 0.851 /
# 0.884 / 0.767). At half, every decision on 35 Raetsch and pima fits, twonorm, MAGIC and
# nmes1988 stays; at a quarter waveform and pima flip, for the worse on three of six
# (benchmarks/studies/results/per_feature_charge.md).
CHARGE_FACTOR = 0.5



def _start_evidence(model, kernel, X, y, rng):
    """``-log Z_EP / n`` at ``kernel`` and its class-balance bias, on a basis selected there."""
    weights = model._row_weights
    bias = initial_bias(kernel, X, y, model.likelihood, weights) + model.bias_offset
    basis = model._select(kernel, X, y, bias, rng).basis_indices.copy()
    objective = AllRowsObjective(  # EP from ADF
        kernel, X, y, X[basis], (None, None), likelihood=model.likelihood, weights=weights
    )
    return float(objective(joint_theta(kernel, model.likelihood, bias), eval_gradient=False))


def _better_start(model, kernel, X, y, rng):
    """The user's kernel, or the same with its length scales at the data's scale
    (:func:`~skgpsparse.kernels._scales.data_scaled_start`), whichever has the higher evidence.

    From length scales far below the distances between rows (``RBF(1.0)`` on many features)
    the evidence can stay in a local optimum where rows barely correlate; the evidence of
    the two starts, each on a basis selected under it, decides (not the test data).
    """
    weights = model._row_weights  # the features' spread over the rows' copies
    other = data_scaled_start(kernel, X, None if weights is None else weighted_std(X, weights))
    if other is None:
        return kernel
    mine = _start_evidence(model, kernel, X, y, rng)
    theirs = _start_evidence(model, other, X, y, rng)
    model._progress.line(
        f"start: -logZ/n {mine:.6f} at {kernel}, {theirs:.6f} at {other} (data's scale)"
    )
    return other if theirs < mine else kernel


def _units(kernel, n_biases, X, n_likelihood=0):
    """The natural unit of each entry of ``(theta, theta_lik, b)``: 1 for a log
    hyperparameter (the kernel's and the likelihood's ``n_likelihood``), the prior latent's
    standard deviation ``sqrt(1 + k(x, x))`` (as in
    :func:`~skgpsparse.latent.learning._hyperparameters.initial_bias`) for a bias."""
    scale = np.sqrt(1.0 + np.mean(kernel.diag(X[:256])))
    return np.append(np.ones(kernel.n_dims + n_likelihood), np.full(n_biases, scale))


def round_bounds(kernel, biases, X, bias_bounds=BIAS_BOUNDS, boxed=True, likelihood=None):
    """The bounds of one round's search from ``(kernel.theta, likelihood.theta, biases)``:
    the kernel's, the likelihood's (None: one without free parameters) and ``bias_bounds``,
    if ``boxed`` intersected with the box of :data:`_ROUND_STEP` around the start (the bias
    in standard deviations of the prior latent, ``sqrt(1 + k(x, x))`` as in
    :func:`~skgpsparse.latent.learning._hyperparameters.initial_bias`)."""
    biases = np.atleast_1d(biases)
    own = np.empty((0, 2)) if likelihood is None else likelihood.bounds
    own_theta = np.empty(0) if likelihood is None else likelihood.theta
    bounds = np.vstack([kernel.bounds.reshape(-1, 2), own,
                        np.tile(bias_bounds, (biases.size, 1))])
    if not boxed:
        return bounds
    start = np.concatenate([kernel.theta, own_theta, biases])
    step = _ROUND_STEP * _units(kernel, biases.size, X, own_theta.size)
    lower = np.minimum(np.maximum(bounds[:, 0], start - step), start)
    upper = np.maximum(np.minimum(bounds[:, 1], start + step), start)
    return np.column_stack([lower, upper])


def _learn(model, kernel, bias, sites, X, y, basis, stop=None, X_u=None):
    """``(theta, b)`` by the all-rows evidence on a fixed basis: ``(loss, kernel, bias, sites)``.

    The likelihood's free parameters (the Student-t's scale and degrees of freedom) are
    learned with them, as ``theta_lik`` in the objective's ``[theta, theta_lik, b]``
    (:func:`~skgpsparse.latent.objectives._ep_evidence.joint_theta`); the learned likelihood
    becomes ``model.likelihood``, the next round's selection's and start.

    Per-feature length scales also carry the hyperprior of
    :mod:`skgpsparse.latent.objectives._hyperprior` (MAP); the loss is then minus the log
    evidence and log prior per row. ``stop``: a function of the run's bounds giving a
    :class:`~skgpsparse.latent.learning._charge_bound.ChargeBound`, which may end the
    L-BFGS-B run early. ``X_u``: the basis inputs, when they are not rows of ``X`` (then
    ``basis`` is ignored).
    """
    objective = AllRowsObjective(
        kernel, X, y, X[basis] if X_u is None else X_u, sites, tol=_SEARCH_TOL,
        progress=model._progress, likelihood=model.likelihood, weights=model._row_weights,
    )
    target = with_length_scale_prior(objective, kernel, total_weight(y.size, objective.weights))
    likelihood = model.likelihood
    if model.optimizer is not None:
        theta0 = joint_theta(kernel, likelihood, bias)
        search = model._progress.counting("hyperparameters", target)
        # the fit's first learn starts from the user's kernel, every later one from a learned
        # theta: only those are boxed (_ROUND_STEP)
        bounds = round_bounds(kernel, bias, X, boxed=bool(getattr(model, "loss_curve_", None)),
                              likelihood=likelihood)
        bound = None if stop is None else stop(bounds)
        search = search if bound is None else bound.watch(search)
        units = _units(kernel, 1, X, likelihood.theta.size)
        theta, _ = minimize_theta(model.optimizer, search, theta0, bounds, callback=bound,
                                  resolution=(units, _STEP_TOL))
        kernel, likelihood, bias = split_theta(kernel, likelihood, theta)
        model.likelihood = likelihood
    # the sites at the kept theta (the last evaluation may have been another), refined;
    # without learning they are the fitted posterior, by plain EP as on row partitions
    objective.tol = _EP_TOL
    objective.accelerate = objective.accelerate and model.optimizer is not None
    loss = float(target(joint_theta(kernel, likelihood, bias), eval_gradient=False))
    return loss, kernel, bias, objective.sites


def _select_basis(model, kernel, X, y, bias, rng):
    """The basis indices the model's selection chooses under ``(kernel, bias)``."""
    return model._select(kernel, X, y, bias, rng).basis_indices.copy()


def next_gain_small(losses, tol):
    """Whether the next round's gain, predicted from the last two rounds' gains ``g_(k-1)``,
    ``g_k`` of the losses ``losses`` (oldest first) by their geometric decrease ``g_k^2 /
    g_(k-1)``, is below ``tol`` (False without two gains, or when they do not decrease).

    Examples
    --------
    >>> next_gain_small([0.3248, 0.3191, 0.3179], 1e-3), next_gain_small([0.34, 0.33], 1e-3)
    (True, False)
    """
    if len(losses) < 3:
        return False
    older, last = losses[-3] - losses[-2], losses[-2] - losses[-1]
    return bool(0.0 < last < older and last * last / older < tol)


def _rounds(model, kernel, bias, sites, X, y, rng, max_rounds, select=_select_basis,
            learn=_learn, previous=None, bound_rounds=True):
    """Rounds of basis selection and ``(theta, b)`` learning from ``(kernel, bias, sites)``.

    Stops after ``max_rounds`` rounds, when a round improves the evidence per row by less than
    ``tol``, or when the next round's gain predicted from the last two is below ``tol``
    (:func:`next_gain_small`); a round after the first ends its L-BFGS-B run when it cannot improve
    by ``tol`` (:func:`_round_bound`). Returns the round with the highest evidence,
    ``(loss, kernel, bias, basis, sites, exchange_curve, likelihood)`` (``model.likelihood``
    after the round: its learned parameters, if any), and the number of rounds.
    ``select(model, kernel, X, y, bias, rng)`` (basis indices) and
    ``learn(model, kernel, bias, sites, X, y, basis, stop)`` (``(loss, kernel, bias, sites)``) are
    the two steps; the shared one-vs-rest fit
    (:mod:`skgpsparse.classification.multiclass._shared_learning`) passes its own, with ``y`` and
    ``bias`` a row and an entry per class. ``previous``: the loss of a round before these with the
    same kernel (the per-feature trial's first learn), which counts in the predicted gain; ``None``
    if there was none. ``bound_rounds=False``: every round's run goes on to its own end (no
    :func:`_round_bound`).
    """
    best = None
    losses = [] if previous is None else [previous]
    for it in range(max_rounds):
        tic = time.perf_counter()
        basis = select(model, kernel, X, y, bias, rng)
        stop = None if best is None or not bound_rounds else _round_bound(best[0], model.tol)
        loss, kernel, bias, sites = learn(model, kernel, bias, sites, X, y, basis, stop=stop)
        model.loss_curve_.append(loss)
        losses.append(loss)
        improved = best is None or loss < best[0] - model.tol
        if best is None or loss < best[0]:
            best = (loss, kernel, bias, basis, sites, model._last_exchange_curve,
                    model.likelihood)
        b = f"b {bias:+.4f}" if np.ndim(bias) == 0 else f"mean b {np.mean(bias):+.4f}"
        lik = f"  {model.likelihood}" if model.likelihood.theta.size else ""
        model._progress.line(
            f"iter {len(model.loss_curve_):3d}  -logZ/n {loss:.6f}  basis {basis.size}  "
            f"{b}  kernel {kernel}{lik}  ({time.perf_counter() - tic:.2f} s)"
        )
        if model.optimizer is None or not improved:
            break
        if PREDICT_GAIN and next_gain_small(losses, model.tol):
            model._progress.line("the next round's predicted gain is below tol: rounds end")
            break
    return best, it + 1


def _round_bound(best_loss, tol):
    """``stop`` of a round's learn after the first (:func:`_learn`): its L-BFGS-B run ends when
    :class:`~skgpsparse.latent.learning._charge_bound.ChargeBound` says that it cannot get
    ``tol`` below the best round's loss. Such a round ends the rounds whatever its run gains
    (:func:`_rounds`); the runs of the confirming rounds crept along ridges of the evidence for
    their whole 15 iterations (twonorm: a third of the fit's evaluations; session 23 in the
    benchmark log, benchmarks/README.md, "History").
    """
    return ChargeStop(best_loss, tol, OPTIMIZER_MAXITER)


def _per_feature_choice(model, best, X, y, rng, max_rounds, n=None, select=_select_basis,
                        learn=_learn, early_exit=True):
    """The fitted round, or one with one length scale per feature if the evidence says so.

    The kept round's scalar length scale is copied to every feature (the same kernel, so the
    evidence can only rise); ``(theta, b)`` are learned on the kept basis (one round), and only if
    that already raises the log evidence by more than the charge for the ``d - 1`` extra
    hyperparameters (:data:`CHARGE_FACTOR` times the BIC's) do the rounds (re-selection
    included) go on with the per-feature kernel, whose best round must still pay the charge to
    be kept. Type-II maximum likelihood alone always
    prefers more length scales (on a few hundred rows they fit noise); the charge approximates the
    integral over them. At most ``max_rounds`` rounds; returns ``(round, number of rounds run)``.
    ``n`` is the number of rows the charge and the gain (``n`` times the loss per row) are for
    (``None``: ``y``'s, their summed weights in a weighted fit); ``select`` and ``learn`` are
    :func:`_rounds`'s steps (``learn`` takes ``stop``, see :func:`_learn`). ``early_exit``: the
    first learn stops when
    :class:`~skgpsparse.latent.learning._charge_bound.ChargeBound` says that it cannot pay
    the charge (the decision is then "not kept", as the full run's would be).
    """
    loss, kernel, bias, basis, sites, curve, likelihood = best
    ard = per_feature_length_scales(kernel, X.shape[1])
    if ard is None or max_rounds < 1:
        return best, 0
    if rows_uncorrelated(kernel, X[:256]):
        # one length scale leaving the rows uncorrelated (noise: the Student-t on pumadyn32nm)
        # would stay so per feature: the trial starts at the data's scale instead
        w = model._row_weights
        ard = data_scaled_start(ard, X, None if w is None else weighted_std(X, w)) or ard
    model.likelihood = likelihood  # the trial starts from the kept round's
    n = total_weight(np.shape(y)[-1], model._row_weights) if n is None else n
    charge = CHARGE_FACTOR * bic_charge(ard.n_dims - kernel.n_dims, n)
    # the first learn's early exit (:mod:`._charge_bound`), when it cannot pay
    stop = ChargeStop(loss, charge / n, OPTIMIZER_MAXITER)
    first = learn(model, ard, bias, sites, X, y, basis, stop=stop if early_exit else None)
    if stop.stopped:
        model._progress.line("one length scale per feature: the first learn cannot pay the "
                             "charge (its L-BFGS-B run stopped early)")
    model.loss_curve_.append(first[0])
    candidate = (first[0], first[1], first[2], basis, first[3], curve, model.likelihood)
    rounds = 1
    if n * (loss - first[0]) > charge and max_rounds > 1:
        more_best, more = _rounds(model, first[1], first[2], first[3], X, y, rng,
                                  max_rounds - 1, select, learn, previous=first[0])
        rounds += more
        if more_best[0] < candidate[0]:
            candidate = more_best
    gain = n * (loss - candidate[0])
    keep = gain > charge
    model._progress.line(
        f"one length scale per feature: log evidence and prior {gain:+.2f} nats, charge "
        f"{charge:.2f}: {'kept' if keep else 'not kept'}"
    )
    kept = candidate if keep else best
    model.likelihood = kept[6]
    return kept, rounds


def _converged(best, X, y, weights=None):
    """The kept round with ``(theta, b)`` taken to L-BFGS-B's own convergence on its basis.

    The rounds give the optimiser a few iterations each (and EP a loose tolerance) between
    re-selections; the kept round's ``(theta, b)`` then sits near, not at, the optimum of its
    evidence. As scikit-learn's GPC, the fit ends where L-BFGS-B converged: the projected
    gradient of minus the log evidence per row below ``gtol = 1e-5`` (scikit-learn's, there
    on the total; a per-row tolerance keeps large fits from chasing round-off; the bias
    measured in standard deviations of the prior latent), at a bound, or at a step below
    :data:`_STEP_TOL`; a ``ConvergenceWarning`` says when the iterations ran out first.
    """
    loss, kernel, bias, basis, sites, curve, likelihood = best
    n = total_weight(y.size, weights)
    objective = AllRowsObjective(kernel, X, y, X[basis], sites, likelihood=likelihood,
                                 weights=weights)
    target = with_length_scale_prior(objective, kernel, n)
    bounds = np.vstack([kernel.bounds.reshape(-1, 2), likelihood.bounds, BIAS_BOUNDS])
    # L-BFGS-B sees b in units of the prior latent's standard deviation (_units): in probit
    # units its curvature is far below theta's where the amplitude is large (b trades against
    # the kernel's near-constant part), and the run crept along b (twonorm: 13-16 evaluations
    # where 5-11 reach the same optimum; session 23 in benchmarks/README.md, "History")
    units = _units(kernel, 1, X, likelihood.theta.size)

    def in_units(z, eval_gradient=True):
        value, grad = target(z * units, eval_gradient=True)
        return value, grad * units

    options = {"gtol": _POLISH_GTOL, "ftol": 1e-15, "maxiter": _POLISH_MAXITER}
    z, _, res = StepResolution(in_units, np.ones(units.size), _STEP_TOL).minimize(
        joint_theta(kernel, likelihood, bias) / units, bounds=bounds / units[:, None],
        options=options
    )
    if res is not None and res.status == 1:  # the iterations ran out (scikit-learn's warning)
        _check_optimize_result("lbfgs", res)
    theta = z * units
    value = float(target(theta, eval_gradient=False))  # the sites at the kept theta
    if not value <= loss:
        return best
    kernel, likelihood, bias = split_theta(kernel, likelihood, theta)
    return value, kernel, bias, basis, objective.sites, curve, likelihood


def _learn_rounds(model, X, y, rng, subsample=False):
    """The kept round of :func:`fit_all_rows` on the rows ``X, y`` and the rounds run.

    ``subsample``: ``X, y`` are the random subsample of ``learning_rows`` (the posterior then
    comes from EP on every row). The final L-BFGS-B run to convergence (:func:`_converged`) is
    then skipped: it refines ``(theta, b)`` to the optimum of the subsample's evidence, was
    28-43 % of the learning's CPU at 2 x 10^5 rows and moved the test NLP there by 1.5e-4
    (``benchmarks/scale/results/million_polish_ab.md``).
    """
    kernel = clone(model.kernel)
    sites = (None, None)  # EP's first run starts from one ADF pass
    if model.optimizer is not None and model.warm is None:  # a warm start keeps its kernel
        kernel = _better_start(model, kernel, X, y, rng)
    bias = model._initial_bias(kernel, X, y) + model.bias_offset
    model.loss_curve_ = []
    best, n_iter = _rounds(model, kernel, bias, sites, X, y, rng, model.max_iter)
    if model.per_feature_choice:
        # the rounds of both kernels together are at most max_iter
        best, more = _per_feature_choice(model, best, X, y, rng, model.max_iter - n_iter)
        n_iter += more
    if model.basis_cap is not None:  # max_basis="auto": the size from the fit at the stand-in's
        best, more = grown_rounds(model, best, X, y, rng, _rounds)
        n_iter += more
    if model.optimizer == "fmin_l_bfgs_b" and not subsample and not model.refine_basis:
        best = _converged(best, X, y, model._row_weights)  # the refinement's own polish
    model.likelihood = best[6]  # the kept round's (its parameters learned, if any)
    return best, n_iter


def _round_on_all_rows(model, best, X, y, rows, X_u=None):
    """The round ``best`` learned on ``X[rows]`` (``None``: on ``X``), with EP over every row.

    ``(theta, b)`` and the basis stay (its indices mapped to the training set's; ``X_u``:
    its inputs, where they are not rows); EP runs on all rows to the full tolerance, its
    sites started by one ADF pass over them.
    """
    loss, kernel, bias, basis, _, curve, likelihood = best
    basis = basis if rows is None else rows[basis]
    n = total_weight(y.size, model.sample_weight)
    # EP from an ADF pass, plain (damped) as the same step on row partitions (a partitioned fit's
    # posterior equals the in-memory one): acceleration saves little here (adult 40,000
    # rows: 14 sweeps against 45; 10^6 synthetic rows: 8 against 8)
    objective = AllRowsObjective(kernel, X, y, X[basis] if X_u is None else X_u, (None, None),
                                 accelerate=False, likelihood=likelihood,
                                 weights=model.sample_weight)
    target = with_length_scale_prior(objective, kernel, n)
    loss = float(target(joint_theta(kernel, likelihood, bias), eval_gradient=False))
    model._progress.line(f"EP on all {n} rows: -logZ/n {loss:.6f}")
    return loss, kernel, bias, basis, objective.sites, curve, likelihood


@reusing_priors()
def fit_all_rows(model, X, y, rng):
    """The outer loop of ``LatentSparseGP.fit`` for ``posterior="all_rows"``.

    Rounds of: greedy basis selection (ADF, the model's selector) under ``(theta, b)``; then
    ``(theta, b)`` by the all-rows EP evidence with that basis. Stops after ``max_iter`` rounds,
    or when a round improves the evidence per row by less than ``tol``; keeps the round with
    the highest evidence. With ``per_feature_choice`` (the package's default kernel) the rounds
    left then run with one length scale per feature, kept if the evidence pays the charge
    (:func:`_per_feature_choice`). The sites of the kept round, one per training row, become
    ``site_precision_`` and ``site_mean_``. With more rows than ``model.learning_rows``
    allows (:mod:`skgpsparse._learning_rows`) the rounds run on a random subsample of them,
    and EP under the kept round on all (:func:`_round_on_all_rows`).
    """
    n = y.size
    rows = None
    if model.optimizer is not None:
        rows = learning_subsample(model.learning_rows, n, model.max_basis, rng)
    if rows is not None:  # a warm start's basis is its first round's start
        rows, (model._warm_basis,) = with_basis_rows(rows, [model._warm_basis])
    if rows is None:
        best, n_iter = _learn_rounds(model, X, y, rng)
    else:
        model._progress.line(
            f"learning on {rows.size} of {n} rows (learning_rows={model.learning_rows!r}); "
            "EP on all of them"
        )
        weights = model.sample_weight
        model._row_weights = None if weights is None else weights[rows]
        best, n_iter = _learn_rounds(model, X[rows], y[rows], rng, subsample=True)
        model._row_weights = weights
        if not model.refine_basis:
            best = _round_on_all_rows(model, best, X, y, rows)
        else:  # the refinement's rows get their own EP (their sites: None)
            best = best[:3] + (rows[best[3]], (None, None)) + best[5:]
    Z = None
    if model.refine_basis:
        best, Z = _refined(model, best, X, y, rng)
    model.n_iter_ = n_iter
    _, model.kernel_, model.bias_, model.basis_indices_, sites, curve, model.likelihood = best
    if sites[0] is None:  # no EP run was finite (AllRowsObjective keeps the last finite sites)
        raise ValueError(
            "EP failed at every hyperparameter value tried from "
            f"kernel={model.kernel!r}: the kernel may not be positive definite on these "
            "inputs (ExpSineSquared, e.g., is only on one feature). Try another kernel, or "
            "other initial hyperparameters or bounds."
        )
    if model.optimizer is not None:
        check_bounds(model, model.kernel_)
    model.exchange_loss_curve_ = [float(v) for v in curve]
    model.site_precision_ = sites[0]
    model.site_mean_ = np.divide(sites[1], sites[0], out=np.zeros(n), where=sites[0] != 0)
    model._train = (X, y)
    model._set_fitted_basis(X, y, Z)
    return model


def _refined(model, best, X, y, rng):
    """``(best, Z)``: the round ``best`` (its basis indices of ``X``; its sites every row's,
    or None) with its basis inputs refined (:mod:`._refine`) on every row or, above
    ``model.refine_rows``, on a random subsample, then EP on every row under them from one ADF
    pass (as on row partitions)."""
    rows = learning_subsample(model.refine_rows, y.size, model.max_basis, rng)
    part, X_r, y_r, weights = best, X, y, model.sample_weight
    if rows is not None:
        sites = best[4]
        part = best[:4] + ((None, None) if sites[0] is None else
                           tuple(s[rows] for s in sites),) + best[5:]
        X_r, y_r = X[rows], y[rows]
        weights = None if weights is None else weights[rows]
    refined, Z, model.refine_iter_ = refine_basis(model, part, X_r, y_r, X[best[3]],
                                                  model.refine_basis, weights)
    model.likelihood = refined[6]
    return _round_on_all_rows(model, refined, X, y, None, X_u=Z), Z
