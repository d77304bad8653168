"""The regressor's alternation of basis selection and hyperparameter learning.

As in the exchange paper's experiments, the hyperparameters start from the exact GP on a
random subset of the rows; then basis selection (forward steps and exchange, at fixed
hyperparameters) alternates with learning the hyperparameters on the selected basis, and the
best visited (basis, hyperparameters) pair by the objective in force is kept. With fixed
hyperparameters one selection is the whole fit.
"""

import numpy as np

from .._progress import block_megabytes
from .._rows import RowStore, row_centre
from ..kernels._columns import kernel_diag
from ._basis import select_and_exchange
from ._likelihood import check_noise_bounds, learn_hyperparameters, warn_at_noise_bound
from ._partitioned import PartitionedRegressionState, row_jitter_base
from ._partitioned_objectives import PARTITIONED_OBJECTIVES
from ._state import RELATIVE_JITTER, RegressionState
from ._vfe import OBJECTIVES, state_objective

__all__ = ["alternate", "jitter"]

# Size of the random subset whose full-GP likelihood initialises the hyperparameters.
_INIT_SUBSET = 100


def jitter(kernel, X):
    """The state's and the likelihood's jitter: relative to the mean prior variance."""
    if isinstance(X, RowStore):
        return RELATIVE_JITTER * max(row_jitter_base(kernel, X), 0.0)
    return RELATIVE_JITTER * max(float(np.mean(kernel_diag(kernel, X))), 0.0)


# The training data are ``X, y`` (arrays) or a row store ``X`` (with ``y`` None) whose
# partitions hold the rows and targets, e.g. on dask workers (skgpsparse._rows).
def _new_state(model, kernel, X, y, s2, p):
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


def _take(X, y, indices):
    """``(X[indices], y[indices])``, from the partitions of a row store."""
    return X.take(indices) if isinstance(X, RowStore) else (X[indices], y[indices])


def _select(model, kernel, X, y, s2, p, rng):
    """Forward selection to ``p`` basis vectors, then ``n_exchange`` exchange steps."""
    state = _new_state(model, kernel, X, y, s2, p)
    return select_and_exchange(
        state, model._selector, p, model.n_exchange, rng, [], progress=model._progress
    )


def _learn(model, kernel, s2, X, y, X_basis):
    """Maximise the objective on the basis, warm-started at the current values."""
    return learn_hyperparameters(
        kernel,
        s2,
        X,
        y,
        X_basis,
        noise_bounds=check_noise_bounds(model.noise_variance_bounds),
        optimizer=model.optimizer,
        jitter=jitter(kernel, X),
        objective=(PARTITIONED_OBJECTIVES if isinstance(X, RowStore) else OBJECTIVES)[
            model.hyperparameter_objective
        ],
    )


def alternate(model, X, y, p, rng):
    """Select the basis and learn the hyperparameters of ``model`` on (normalised) ``y``.

    Returns ``(state, kernel, noise_variance, cost_curve, n_iter)``: the final state (the
    kept basis under the kept hyperparameters), and the selection's cost curve.
    """
    noise_bounds = check_noise_bounds(model.noise_variance_bounds)
    kernel, s2 = model.kernel_, float(model.noise_variance)
    n = X.shape[0]
    learn = model.optimizer is not None and (kernel.n_dims > 0 or noise_bounds is not None)
    model._progress.line(
        f"fit: {n} rows x {X.shape[1]} features, basis of {p}, "
        f"{'learning the hyperparameters' if learn else 'fixed hyperparameters'}; the kernel "
        f"block takes {block_megabytes(n, p):.1f} MB"
    )
    if learn:
        # Initialisation as in the exchange paper's experiments: hyperparameters of the
        # full GP on a random subset (eq. (8.17) with every subset point in the basis is
        # the exact GP likelihood), so the first selection does not use a poor kernel.
        subset = rng.choice(n, size=min(n, max(p, _INIT_SUBSET)), replace=False)
        X_sub, y_sub = _take(X, y, subset)
        kernel, s2, _ = _learn(model, kernel, s2, X_sub, y_sub, X_sub)
    best = None
    previous = None
    n_iter = 0
    for it in range(model.max_iter if learn else 1):
        state, curve = _select(model, kernel, X, y, s2, p, rng)
        if learn:
            # Warm start; the noise no lower than the mean squared residual of the MAP fit
            # (a subset-GP start can put it far below what the sparse model can reach).
            if noise_bounds is not None:
                s2 = max(s2, state.mean_squared_residual())
            kernel, s2, lml = _learn(model, kernel, s2, X, y, _take(X, y, state.basis)[0])
        else:
            lml = state_objective(state, model.hyperparameter_objective)
        n_iter = it + 1
        model._progress.line(
            f"iteration {it + 1}: {model.hyperparameter_objective} {lml:.6g}, "
            f"noise_variance {s2:.4g}, kernel {kernel}"
        )
        if best is None or lml > best[0]:
            # With fixed hyperparameters the state is final; otherwise only its basis.
            best = (lml, state if not learn else state.basis, kernel, s2, curve)
        if previous is not None and lml - previous < model.tol * max(1.0, abs(previous)):
            break
        previous = lml

    _, state, kernel, s2, curve = best
    if learn:
        kernel._check_bounds_params()
        warn_at_noise_bound(s2, noise_bounds)
        # The final state: the best basis with the hyperparameters learned on it.
        basis = state
        state = _new_state(model, kernel, X, y, s2, len(basis))
        for j in basis:
            state.append(j)
    return state, kernel, s2, curve, n_iter
