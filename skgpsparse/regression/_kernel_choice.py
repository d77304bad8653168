"""The regressor's start, and the default kernel's choice of one length scale per feature.

The hyperparameters start, as in the exchange paper's experiments, from the full GP on a
random subset of the learning rows. With ``kernel=None`` the subset also decides the kernel:
the full GP is learned there with ``C(1.0) * RBF(1.0)`` and with one length scale per
feature (ARD) from its own start at the data's scale
(:func:`~skgpsparse.kernels._scales.data_scaled_start`: ``sqrt(d) std_j``), and the
per-feature kernel is kept only if its exact log marginal likelihood on the ``m`` subset rows
(GPML eq. (5.8)) beats the single length scale's by more than the Bayesian information
criterion's charge ``(d - 1) / 2 log m`` for the ``d - 1`` extra length scales
(:func:`~skgpsparse.kernels._scales.bic_charge`, the classifier's rule,
:func:`skgpsparse.latent.learning._ep_rounds._per_feature_choice`): type-II maximum
likelihood alone always prefers more length scales, and the charge approximates the
integral over them. The fit then selects, learns and refines with the kernel kept, once.

The per-feature fit does not start from the single length scale's result: when one length
scale cannot see the signal (pumadyn32nm: 4 of 32 inputs matter), that fit ends in the
noise-only model, where every length scale's gradient vanishes, and a start copied from it
stays there. The choice is made on the subset's exact evidence rather than on the sparse
objective of two whole fits: on KIN40K with 100 basis vectors, Titsias' bound of the
per-feature fit was 1078 nats higher on the 10,000 rows, and its test NLPD 0.25 against 0.15
(the bound rewards length scales a small basis can follow; the benchmark log in git history:
``benchmarks/README.md``, "History").
"""

import numpy as np

from ..kernels._scales import (
    bic_charge,
    data_scaled_start,
    per_feature_length_scales,
    rows_uncorrelated,
)
from ..rows._store import RowStore, row_centre

__all__ = ["DEFAULT_KERNEL_AT_BOUNDS", "feature_std", "per_feature_start", "subset_start"]

# The default kernel's hyperparameters whose upper bound is reached by design and not warned
# about (kernels._bounds.warn_at_bounds): a per-feature length scale at its upper bound (1e5)
# is a feature the fit switched off, the right answer for an irrelevant one (20 features, 16
# irrelevant: 11 of them there at 20,000 rows). A single length scale, the amplitude and the
# noise still warn.
DEFAULT_KERNEL_AT_BOUNDS = ("k2__length_scale",)

# With the default kernel the subset has at least this many rows per hyperparameter of the
# per-feature kernel (the noise included): on 100 rows pumadyn32nm's 34 hyperparameters fit
# the subset's noise, and the refinement from there ended in the noise-only model.
ROWS_PER_HYPERPARAMETER = 10


def _squared_deviations(part, centre):
    return np.sum((part.X - centre) ** 2, axis=0, dtype=np.float64)


def feature_std(X):
    """Each feature's standard deviation over the rows of ``X`` (an array or a row store)."""
    if not isinstance(X, RowStore):
        return np.std(np.asarray(X, dtype=np.float64), axis=0)
    centre = row_centre(X)
    return np.sqrt(X.sum(_squared_deviations, centre) / X.n)


def per_feature_start(kernel, X):
    """``kernel`` with one length scale per feature, each at the data's scale, or None.

    None when ``kernel`` has no free scalar length scale or ``X`` one feature. Where the
    data's scale is within a factor of two of the kernel's value, that value is kept.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF, ConstantKernel as C
    >>> from skgpsparse.regression._kernel_choice import per_feature_start
    >>> X = np.random.RandomState(0).randn(500, 16) * np.repeat([1.0, 3.0], 8)
    >>> np.round(per_feature_start(C(1.0) * RBF(1.0), X).k2.length_scale[[0, 8]])
    array([ 4., 12.])
    """
    ard = per_feature_length_scales(kernel, X.shape[1])
    if ard is None:
        return None
    scaled = data_scaled_start(ard, X, std=feature_std(X))
    return ard if scaled is None else scaled


def subset_start(model, kernel, X, y, size, rng, take, fit_subset, log_likelihood):
    """``(kernel, noise_variance)`` of the full GP on a random subset of ``size`` rows.

    ``take(X, y, indices)`` gives the subset's rows; ``fit_subset(kernel, X_sub, y_sub)``
    learns the full GP's ``(kernel, noise_variance)`` there from ``kernel``, and
    ``log_likelihood(kernel, noise_variance, X_sub, y_sub)`` is its objective's value. A
    start that leaves the subset's rows uncorrelated
    (:func:`~skgpsparse.kernels._scales.rows_uncorrelated`) explains them as noise (20
    features and 100 rows can be too few to see the signal): it is learned once more on four
    times as many rows. With ``kernel=None`` (``model.kernel``) the decision between one
    length scale and one per feature is made on a subset of at least
    ``ROWS_PER_HYPERPARAMETER`` rows per hyperparameter of the per-feature kernel, where both
    kernels are learned (the module docstring); its first ``size`` rows are the subset drawn
    otherwise (``rng`` is a ``RandomState``, whose draws without replacement are a prefix of
    one permutation), so that a fit which keeps one length scale is the fit of
    ``C(1.0) * RBF(1.0)`` passed as a user kernel.
    """
    n = X.shape[0]
    trial = per_feature_start(kernel, X) if model.kernel is None else None
    size = min(n, size)
    rows = min(n, max(size, ROWS_PER_HYPERPARAMETER * (trial.n_dims + 1))) if trial else size
    drawn = rng.choice(n, size=rows, replace=False)
    if trial is not None:
        X_sub, y_sub = take(X, y, drawn)
        one = start = fit_subset(kernel, X_sub, y_sub)
        other = fit_subset(trial, X_sub, y_sub)
        gain = log_likelihood(*other, X_sub, y_sub) - log_likelihood(*one, X_sub, y_sub)
        charge = bic_charge(trial.n_dims - kernel.n_dims, rows)
        keep = gain > charge
        model._progress.line(
            f"one length scale per feature: the subset's log likelihood {gain:+.2f} nats "
            f"over one for all on {rows} rows, BIC charge {charge:.2f}: "
            f"{'kept' if keep else 'not kept'}"
        )
        if keep:
            kernel, start, size = trial, other, rows
    if trial is None or not keep:
        if rows > size or trial is None:
            X_sub, y_sub = take(X, y, drawn[:size])
            start = fit_subset(kernel, X_sub, y_sub)
    if size < n and rows_uncorrelated(start[0], X_sub):
        X_sub, y_sub = take(X, y, rng.choice(n, size=min(n, 4 * size), replace=False))
        start = fit_subset(kernel, X_sub, y_sub)
    return start
