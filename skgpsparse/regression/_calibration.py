"""The noise calibration of a fitted basis: ``noise_calibration`` (leave-one-out, ``_noise_loo``).

Applied by the alternation (:mod:`._alternation`) to the model it keeps; the basis and the
length scales stay.
"""

from functools import partial

import numpy as np
from scipy.linalg import cholesky

from ..rows._store import RowStore
from ._all_rows_posterior import rows_by_passes
from ._noise_loo import kernel_amplitude, loo_noise_variance
from ._partitioned_objectives import PARTITIONED_OBJECTIVES
from ._vfe import OBJECTIVES

__all__ = ["calibrate_noise"]


def calibrate_noise(model, fit, X, y, noise_bounds, row_noise=None):
    """The noise variance, and with ``"loo"`` the kernel's amplitude, by the leave-one-out
    predictive likelihood (``_noise_loo.py``).

    The basis, the length scales and the shape of the kernel stay. Scaling the kernel by
    ``c`` scales ``K_uu``, its jitter and ``V V^T`` by ``c`` and ``L`` and ``V y`` by
    ``sqrt(c)``: only ``R`` (the factor of ``V V^T + s2 I``) and the objective's value are
    recomputed. With every training row in the basis the model is the full GP and the
    noise stays the likelihood's. With ``row_noise`` (per-row noise and weights,
    :mod:`._row_noise`) the fit's factors are the whitened rows' and what is calibrated is
    the noise's common scale ``s2``: the leave-one-out residuals standardised by each row's
    own noise (``_noise_loo.py``, "Per-row noise and weights").
    """
    s2, p = fit.noise_variance, fit.L.shape[0]
    VVt = fit.R @ fit.R.T - s2 * np.eye(p)
    if not isinstance(X, RowStore):
        X, Y = X.astype(np.float64, copy=False), y.reshape(len(y), -1)
    else:
        Y = None
    amplitude = kernel_amplitude(fit.kernel) if model.noise_calibration == "loo" else None
    s2_loo, c, (before, after) = loo_noise_variance(
        fit.kernel, X, Y, fit.basis_vectors, fit.L, VVt, fit.Vy, s2, noise_bounds,
        scale_bounds=None if amplitude is None else amplitude[2], progress=model._progress,
        row_noise=row_noise,
    )
    model._progress.line(
        f"noise variance by leave-one-out: {s2:.4g} -> {s2_loo:.4g}, kernel scaled by "
        f"{c:.4g} (leave-one-out NLPD {before:.4f} -> {after:.4f})"
    )
    if s2_loo == s2 and c == 1.0:
        return fit
    kernel, jitter_c, L, Vy = fit.kernel, fit.jitter, fit.L, fit.Vy
    if c != 1.0:
        name, value, _ = amplitude
        kernel = kernel.clone_with_theta(kernel.theta)
        kernel.set_params(**{name: value * c})
        jitter_c, L, Vy, VVt = c * jitter_c, np.sqrt(c) * L, np.sqrt(c) * Vy, c * VVt
    R = cholesky(VVt + s2_loo * np.eye(p), lower=True, check_finite=False)
    if not isinstance(X, RowStore):  # V whole only below the budget (._all_rows_posterior)
        X = rows_by_passes(X, y, p, row_noise) or X
    objective = (PARTITIONED_OBJECTIVES if isinstance(X, RowStore) else OBJECTIVES)[
        model.hyperparameter_objective
    ]
    if row_noise is not None:
        objective = partial(objective, row_noise=row_noise)
    value = objective(kernel, X, y, fit.basis_vectors, s2_loo, jitter=jitter_c)
    return fit._replace(
        kernel=kernel, noise_variance=s2_loo, L=L, R=R, Vy=Vy, jitter=jitter_c,
        objective=float(value),
    )
