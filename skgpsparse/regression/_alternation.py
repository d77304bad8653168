"""The regressor's alternation of basis selection and hyperparameter learning.

As in the exchange paper's experiments, the hyperparameters start from the exact GP on a
random subset of the rows; then basis selection (forward steps and exchange, at fixed
hyperparameters) alternates with learning the hyperparameters on the selected basis, and the
best visited (basis, hyperparameters) pair by the objective in force is kept. With fixed
hyperparameters one selection is the whole fit. With ``refine_basis`` one selection at the
starting hyperparameters is followed by the refinement (``_refine.py``), which learns them
jointly with the basis inputs.
"""

import warnings
from functools import partial
from typing import NamedTuple

import numpy as np

from .._learning_rows import learning_subsample
from .._scaling import power_of_two_scale
from ..inference._row_columns import stores_columns
from ..kernels._columns import kernel_diag
from ..rows._store import RowStore, row_centre
from ._all_rows_posterior import factors_objective, posterior_on_all_rows, posterior_on_row_store
from ._basis import select_and_exchange
from ._basis_size import auto_basis_cap, grow_until_saturated, is_auto
from ._calibration import calibrate_noise
from ._dtc import sparse_factors
from ._exact import FULL_BASIS_OBJECTIVES
from ._fit_memory import fit_memory
from ._full_basis import full_basis_fit
from ._hyperparameters import check_noise_bounds, learn_hyperparameters
from ._kernel_choice import DEFAULT_KERNEL_AT_BOUNDS, subset_start
from ._partitioned import PartitionedRegressionState, row_jitter_base
from ._partitioned_objectives import PARTITIONED_OBJECTIVES
from ._refine import refine_basis, refine_iterations
from ._row_noise import weighted_mean_var
from ._row_scaled_state import RowScaledState
from ._state import RELATIVE_JITTER, RegressionState
from ._vfe import OBJECTIVES, state_objective
from ._warm import basis_rows
from ._white import warn_at_bounds

__all__ = ["FittedBasis", "alternate", "jitter"]

# Size of the random subset whose full-GP likelihood initialises the hyperparameters.
_INIT_SUBSET = 100


def jitter(kernel, X):
    """The state's and the likelihood's jitter: relative to the mean prior variance."""
    if isinstance(X, RowStore):
        return RELATIVE_JITTER * max(row_jitter_base(kernel, X), 0.0)
    return RELATIVE_JITTER * max(float(np.mean(kernel_diag(kernel, X))), 0.0)


# The training data are ``X, y`` (arrays) or a row store ``X`` (with ``y`` None) whose
# partitions hold the rows and targets, e.g. on cluster workers (skgpsparse.rows._store).
def _new_state(model, kernel, X, y, s2, p, row_noise=None):
    if row_noise is not None:  # per-row noise or weights: the whitened rows
        return RowScaledState(
            kernel, X, y, s2, p, row_noise=row_noise, jitter=jitter(kernel, X),
            n_threads=model._n_threads,
        )
    if isinstance(X, RowStore):
        if getattr(model, "_row_centre", None) is None:
            model._row_centre = row_centre(X)
        return PartitionedRegressionState(
            kernel, X, s2, p, centre=model._row_centre, jitter=jitter(kernel, X),
            n_threads=model._n_threads,
        )
    return RegressionState(
        kernel, X, y, s2, p, jitter=jitter(kernel, X), n_threads=model._n_threads
    )


def _take_noise(row_noise, indices):
    return None if row_noise is None else row_noise.take(indices)


def _take(X, y, indices):
    """``(X[indices], y[indices])``, from the partitions of a row store."""
    return X.take(indices) if isinstance(X, RowStore) else (X[indices], y[indices])


def _select(model, kernel, X, y, s2, p, rng, seeds=(), row_noise=None, auto=False):
    """Forward selection to ``p`` basis vectors (after the rows ``seeds``, a warm start's
    basis), then ``n_exchange`` exchange steps; with ``auto``, to the size that
    :func:`~._basis_size.grow_until_saturated` chooses below ``p`` (its curve kept as
    ``model._size_curve``)."""
    state = _new_state(model, kernel, X, y, s2, p, row_noise)
    for j in seeds[:p]:
        state.append(j)
    if isinstance(X, RowStore):  # each append pass also fetches the next working set's rows
        state.speculate(model._selector, rng)
    curve = []
    if auto:
        noise_bounds = _noise_bounds(model) if _learns(model, model._noise.bounds) else None
        model._size_curve = grow_until_saturated(
            state, model._selector, rng, p, noise_bounds, curve, model._progress)
        p = state.n_basis
    # Exchange steps are judged by the objective in force: cost (2) for the DTC evidence (the
    # exchange paper's rule), the bound itself for VFE, whose trace term cost (2) ignores.
    objective = None
    if model.hyperparameter_objective == "vfe":
        objective = partial(state_objective, objective="vfe")
    return select_and_exchange(
        state, model._selector, p, model.n_exchange, rng, curve, progress=model._progress,
        objective=objective,
    )


def _learn(model, kernel, s2, X, y, X_basis, objective=None, row_noise=None):
    """Maximise the objective on the basis, warm-started at the current values.

    ``objective`` overrides the one of ``model.hyperparameter_objective`` (same signature);
    ``row_noise`` is the rows' per-row noise and weights (:mod:`._row_noise`).

    Without ``normalize_y`` the kernel's amplitude and the noise bounds are in the targets'
    units; targets of extreme magnitude can put the objective out of floating-point range
    at every theta within those bounds, and the error then says so.
    """
    objective = objective or (PARTITIONED_OBJECTIVES if isinstance(X, RowStore) else OBJECTIVES)[
        model.hyperparameter_objective
    ]
    if row_noise is not None:
        objective = partial(objective, row_noise=row_noise)
    if model._progress is not None:
        objective = model._progress.counting("hyperparameters", objective)
    try:
        return learn_hyperparameters(
            kernel,
            s2,
            X,
            y,
            X_basis,
            noise_bounds=_noise_bounds(model),
            optimizer=model.optimizer,
            jitter=jitter(kernel, X),
            objective=objective,
        )
    except ValueError as error:
        if model.normalize_y or y is None or power_of_two_scale(y) == 1.0:
            raise
        raise ValueError(
            f"{error} The targets' magnitude (max |y| = {np.max(np.abs(y)):.3g}) is far "
            "outside the kernel's amplitude and noise_variance_bounds, which are in the "
            "targets' units with normalize_y=False: set normalize_y=True (any finite scale "
            "of y then fits), or rescale y or the bounds."
        ) from error


# Starting noise variances of the subset start besides the model's, as fractions of the
# targets' variance.
_NOISE_STARTS = (0.1, 1.0)


def _noise_bounds(model):
    """The fit's noise bounds (a WhiteKernel term folded in: ``_white``), or the parameter's."""
    noise = getattr(model, "_noise", None)  # set by prepare_fit
    return check_noise_bounds(model.noise_variance_bounds) if noise is None else noise.bounds


def _subset_start(model, kernel, s2, X_sub, y_sub, noise_bounds, row_noise=None):
    """The full GP's hyperparameters on the subset, from several noise starts when it is
    learned.

    The exact likelihood on the subset has local optima that the starting noise variance
    chooses between (pumadyn32nm, 500 rows, ARD: from 0.01 every length scale ends near 0.77,
    an over-fit; from the targets' variance two inputs are relevant and the noise is 0.079;
    from a tenth of it four inputs and noise 0.044, the highest likelihood of the three). So
    besides the model's ``noise_variance`` it starts from ``0.1`` and ``1`` times the
    targets' variance (within the noise bounds; a start within a factor 2 of one already run
    is skipped) and keeps the highest objective: the likelihood decides, not the start. With
    the subset as its own basis the objective is the exact GP's (:mod:`._exact`: one factor
    of ``K + s2 I``, not the sparse objective's solves).
    """
    exact = FULL_BASIS_OBJECTIVES[model.hyperparameter_objective]
    learn = _learn if row_noise is None else partial(_learn, row_noise=row_noise)
    best = learn(model, kernel, s2, X_sub, y_sub, X_sub, exact)
    if noise_bounds is None:
        return best[:2]
    if row_noise is None:
        variance = float(np.mean(np.var(y_sub, axis=0)))
    else:  # the repeated rows' variance
        variance = float(np.mean(weighted_mean_var(y_sub, row_noise.weight)[1]))
    tried = [s2]
    for fraction in _NOISE_STARTS:
        start = min(max(fraction * variance, noise_bounds[0]), noise_bounds[1])
        if not np.isfinite(start) or any(0.5 < start / t < 2.0 for t in tried):
            continue
        tried.append(start)
        found = learn(model, kernel, start, X_sub, y_sub, X_sub, exact)
        if found[2] > best[2]:
            best = found
    return best[:2]


class FittedBasis(NamedTuple):
    """What a fit leaves for prediction and for the fitted attributes."""

    kernel: object  # the kernel with the kept hyperparameters
    noise_variance: float
    basis: np.ndarray  # training rows the basis vectors were selected from
    basis_vectors: np.ndarray  # (p, d): those rows, or where refinement moved them
    L: np.ndarray  # (p, p) lower factor of K_uu + jitter I
    R: np.ndarray  # (p, p) lower factor of V V^T + s2 I, V = L^-1 K_uf
    Vy: np.ndarray  # (p,) or (p, m): V y
    jitter: float
    objective: float  # the hyperparameter objective of the fitted model
    cost_curve: np.ndarray  # cost (2) along the selection that gave the basis
    n_iter: int  # selection / learning alternations
    n_refine: int  # L-BFGS iterations of the refinement


def _learns(model, noise_bounds):
    """Whether the fit learns hyperparameters (an optimizer and something to learn)."""
    return model.optimizer is not None and (
        model.kernel_.n_dims > 0 or noise_bounds is not None
    )


def alternate(model, X, y, p, rng):
    """Select the basis and learn the hyperparameters of ``model`` on (normalised) ``y``.

    Returns a :class:`FittedBasis`: the kept basis under the kept hyperparameters, refined when
    ``model.refine_basis`` asks for it, and the selection's cost curve. With more rows than
    ``model.learning_rows`` allows, selection, learning and refinement run on a random subsample of
    them and the posterior and the calibration on all
    (:mod:`skgpsparse.regression._all_rows_posterior`).
    """
    noise_bounds = model._noise.bounds  # (with a WhiteKernel term folded in: _white)
    learn = _learns(model, noise_bounds)
    row_noise = getattr(model, "_row_noise", None)  # (._row_noise; None: s2 on every row)
    rows, kept = None, getattr(model, "_row_kept", None)  # partitions: rows of weight > 0
    n_kept = X.shape[0] if kept is None else kept.size
    if learn and (model.learning_rows is not None or not isinstance(X, RowStore)):
        rows = learning_subsample(model.learning_rows, n_kept, p, rng)
    if is_auto(model.max_basis):  # the largest basis "auto" grows: n x p of every row
        # (the gradient's n x p arrays only when learning on every row)
        model._basis_cap = auto_basis_cap(model, X, y, n_kept, learn and rows is None)
    if isinstance(X, RowStore) and learn and model.learning_rows is not None:
        # a fit on row partitions (a partitioned array): learning in memory on the driver, on the
        # learning rows gathered from the partitions (the in-memory fit's rows, drawn by the
        # same rng; every row below the threshold), the passes over every row on partitions
        every = rows is None
        rows = np.arange(n_kept) if every else rows
        rows = rows if kept is None else kept[rows]  # among the rows of positive weight
        X_l, y_l = X.take(rows)
        model._progress.line(
            f"learning on {rows.size} of {X.n} rows gathered from {X.n_partitions} row "
            "partitions; the posterior and the calibration on the partitions"
        )
        fit = _learn_basis(model, X_l, y_l, p, rng, _take_noise(row_noise, rows))
        if every:  # the basis's indices among the gathered rows -> the rows' own
            fit = fit._replace(basis=rows[np.asarray(fit.basis)])
        else:
            fit = posterior_on_row_store(
                fit, X, rows, jitter(fit.kernel, X), model.hyperparameter_objective, row_noise
            )
    elif rows is None:
        fit = _learn_basis(model, X, y, p, rng, row_noise)
    else:
        model._progress.line(
            f"learning on {rows.size} of {X.shape[0]} rows (learning_rows="
            f"{model.learning_rows!r}); the posterior and the calibration on all of them"
        )
        # the posterior on all rows holds an n x p block, as a fit at fixed hyperparameters,
        # where it is held whole (else its passes form V's blocks: ._all_rows_posterior)
        n_targets = y.shape[1] if y.ndim == 2 else 1
        cap = getattr(model, "_basis_cap", p)
        if stores_columns(X.shape[0], cap, 8 * X.shape[0] * X.shape[1]):
            fit_memory(
                X.shape[0], X.shape[1], cap, model.kernel_.n_dims, n_targets, False, 0,
                X.dtype == np.float32,
            ).check()
        fit = _learn_basis(model, X[rows], y[rows], p, rng, _take_noise(row_noise, rows))
        fit = posterior_on_all_rows(
            fit, X, y, rows, jitter(fit.kernel, X), model.hyperparameter_objective, row_noise
        )
    # with per-row noise, of the noise's common scale s2 (._noise_loo, "Per-row noise")
    calibrate = noise_bounds is not None and model.noise_calibration is not None
    if learn and calibrate and p < X.shape[0]:
        fit = calibrate_noise(model, fit, X, y, noise_bounds, row_noise)
    if learn:
        expected = DEFAULT_KERNEL_AT_BOUNDS if model.kernel is None else ()
        warn_at_bounds(model._noise, fit.kernel, fit.noise_variance, expected, model._progress)
    return fit


def _learn_basis(model, X, y, p, rng, row_noise=None):
    """:func:`alternate` on the rows ``X, y`` (per-row noise and weights ``row_noise``),
    without the noise calibration."""
    noise_bounds = model._noise.bounds
    kernel, s2 = model.kernel_, float(model._noise.noise_variance)
    warm = model.__dict__.pop("_warm", None)  # warm_start: the previous fit's solution
    seeds = ()
    if warm is not None:
        kernel = warm.kernel
        s2 = s2 if noise_bounds is None else warm.noise_variance
        seeds = () if isinstance(X, RowStore) else basis_rows(X, warm.basis_vectors)
    n = X.shape[0]
    learn = _learns(model, noise_bounds)
    # "auto": p (AUTO_START) sizes the start; the selection grows to at most the cap
    auto, p_start = is_auto(model.max_basis), p
    if auto:
        p = min(model._basis_cap, n)
    learn_step = _learn if row_noise is None else partial(_learn, row_noise=row_noise)
    # max_iter=0: the subset start's hyperparameters are kept, never re-learned on the basis
    learn_on_basis = learn and model.max_iter > 0
    refine = refine_iterations(
        model.refine_basis, model.hyperparameter_objective, model.optimizer, kernel,
        learn_on_basis, p, n, not isinstance(X, RowStore),
    )
    if isinstance(X, RowStore):
        # the rows' n x p state lives in the partitions (e.g. cluster workers), not here
        # (reached with fixed hyperparameters, or learning on every row: learning_rows=None)
        if refine:
            raise ValueError(
                "refine_basis is not available for a fit on a partitioned array "
                "(fixed hyperparameters, or learning_rows=None); pass refine_basis=0, "
                "learning_rows='auto' (learning on rows gathered to the driver), or fit on "
                "an in-memory array."
            )
        if model.refine_basis == "auto" and refine_iterations(
            "auto", model.hyperparameter_objective, model.optimizer, kernel,
            learn_on_basis, p, n, True,
        ):
            warnings.warn(
                "refine_basis='auto' does not refine the basis with learning_rows=None on a "
                "partitioned array (learning on the partitions; the refinement is not "
                "distributed): this fit keeps the selected rows, where the same constructor "
                "refines them in memory. Pass learning_rows='auto' (the default: learning on "
                "rows gathered to the driver, the in-memory model) or refine_basis=0 to "
                "silence this warning.",
                UserWarning,
            )
        needs = f"{X.n_partitions} row partitions"
    else:
        n_targets = y.shape[1] if y.ndim == 2 else 1
        kappa = min(getattr(model._selector, "working_set_size", None) or 0, 64)
        float32 = X.dtype == np.float32
        need = fit_memory(n, X.shape[1], p, kernel.n_dims, n_targets, learn, kappa, float32)
        need.check()  # before the first n x p allocation
        needs = f"needs {need.summary()}"
    model._progress.line(
        f"fit: {n} rows x {X.shape[1]} features, basis of {p}, "
        f"{'learning the hyperparameters' if learn else 'fixed hyperparameters'}; the fit "
        f"{needs}"
    )
    if learn and warm is None:
        # Initialisation as in the exchange paper's experiments: hyperparameters of the
        # full GP on a random subset (eq. (8.17) with every subset point in the basis is
        # the exact GP likelihood), so the first selection does not use a poor kernel; the
        # default kernel's choice of one length scale per feature (._kernel_choice)
        exact = FULL_BASIS_OBJECTIVES[model.hyperparameter_objective]
        take, subset_noise, start_on = _take, lambda X_s: None, _subset_start
        if row_noise is not None:
            # the subsets' row noise, found by their X (subset_start takes, then learns)
            taken = {}

            def take(X_all, y_all, indices):
                X_s, y_s = _take(X_all, y_all, indices)
                taken[id(X_s)] = (X_s, row_noise.take(indices))
                return X_s, y_s

            def subset_noise(X_s):
                return taken[id(X_s)][1]

            def start_on(model, k, s2, X_s, y_s, noise_bounds):
                return _subset_start(model, k, s2, X_s, y_s, noise_bounds, subset_noise(X_s))

        kernel, s2 = subset_start(
            model, kernel, X, y, max(p_start, _INIT_SUBSET), rng, take,
            lambda k, X_s, y_s: start_on(model, k, s2, X_s, y_s, noise_bounds),
            lambda k, s, X_s, y_s: exact(
                k, X_s, y_s, X_s, s, jitter=jitter(k, X_s), row_noise=subset_noise(X_s)
            ),
        )
    if p >= n and not refine and not isinstance(X, RowStore) and not auto:
        # every row in the basis: the full GP without selection (._full_basis)
        fields = full_basis_fit(
            model, X, y, kernel, s2, seeds, learn_on_basis, jitter,
            lambda *args: learn_step(model, *args), row_noise,
        )
        if fields is not None:
            return FittedBasis(**fields)
    best = None
    previous = None
    n_iter = 0
    for it in range(model.max_iter if learn_on_basis else 1):
        state, curve = _select(
            model, kernel, X, y, s2, p, rng, seeds if it == 0 else (), row_noise,
            auto=auto and it == 0,
        )
        if auto and it == 0:
            p = state.n_basis  # the size "auto" chose
        if learn_on_basis and refine:
            # The refinement learns the hyperparameters with the basis inputs, from the
            # starting ones: learning them first on the fixed basis can end in the noise-only
            # model (no signal left for moving the inputs to explain).
            if noise_bounds is not None:
                s2 = max(s2, state.mean_squared_residual())
            best, n_iter = (None, state.basis, kernel, s2, curve), 1
            break
        if learn_on_basis:
            # Warm start; the noise no lower than the mean squared residual of the MAP fit
            # (a subset-GP start can put it far below what the sparse model can reach).
            if noise_bounds is not None:
                s2 = max(s2, state.mean_squared_residual())
            kernel, s2, lml = learn_step(model, kernel, s2, X, y, _take(X, y, state.basis)[0])
        else:
            lml = state_objective(state, model.hyperparameter_objective)
        n_iter = it + 1
        model._progress.line(
            f"iteration {it + 1}: {model.hyperparameter_objective} {lml:.6g}, "
            f"noise_variance {s2:.4g}, kernel {kernel}"
        )
        if best is None or lml > best[0]:
            # With fixed hyperparameters the state is final; otherwise only its basis.
            best = (lml, state if not learn_on_basis else state.basis, kernel, s2, curve)
        if previous is not None and lml - previous < model.tol * n:
            break
        previous = lml

    _, state, kernel, s2, curve = best
    if refine:
        # the refinement's start; it forms every factor of the model it ends at
        basis = np.asarray(state if learn_on_basis else state.basis)
        fit = FittedBasis(
            kernel, s2, basis, _take(X, y, basis)[0].astype(np.float64), None, None, None,
            jitter(kernel, X), np.nan, np.asarray(curve), n_iter, 0,
        )
        fit = _refine(model, fit, X, y, learn_on_basis, noise_bounds, refine, row_noise)
    else:
        if learn_on_basis:
            # The final state: the best basis with the hyperparameters learned on it.
            basis = state
            state = _new_state(model, kernel, X, y, s2, len(basis), row_noise)
            if isinstance(X, RowStore):
                state.prefetch(basis)  # the rows of every append, in one round trip
            for j in basis:
                state.append(j)
        fit = FittedBasis(
            kernel, s2, state.basis, _take(X, y, state.basis)[0].astype(np.float64), state.L,
            state.R, state.Vy, state.jitter,
            state_objective(state, model.hyperparameter_objective), np.asarray(curve), n_iter, 0,
        )
    return fit


def _refine(model, fit, X, y, learn, noise_bounds, max_iter, row_noise=None):
    """Move the basis inputs (and learned hyperparameters) by L-BFGS from the greedy basis:
    at most ``max_iter`` iterations (``row_noise``: the rows' per-row noise and weights, the
    whitened rows' objective)."""
    Y = y.reshape(len(y), -1)
    kernel, s2, Z, value, n_refine = refine_basis(
        fit.kernel, fit.noise_variance, X.astype(np.float64, copy=False), Y, fit.basis_vectors,
        objective=model.hyperparameter_objective, jitter=fit.jitter,
        max_iter=max_iter, learn_kernel=learn,
        noise_bounds=noise_bounds if learn else None, progress=model._progress,
        row_noise=row_noise,
    )
    f = sparse_factors(kernel, X, Y, Z, s2, fit.jitter, False, None, row_noise)
    Vy = f.V @ f.Y
    # the objective of the model kept, from its own factors (the search's evaluations may
    # have taken the Gram route, whose rounding is larger)
    value = factors_objective(model.hyperparameter_objective, kernel, X, f)
    return fit._replace(
        kernel=kernel, noise_variance=s2, basis_vectors=Z, L=f.L, R=f.R,
        Vy=Vy[:, 0] if y.ndim == 1 else Vy, objective=float(value), n_refine=n_refine,
    )
