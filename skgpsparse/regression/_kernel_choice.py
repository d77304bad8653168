"""The default kernel: one length scale for all features, or one per feature (ARD).

With ``kernel=None`` the regressor learns ``C(1.0) * RBF(1.0)`` as before, then the same
kernel with one length scale per feature from its own start at the data's scale
(:func:`~skgpsparse.kernels._scales.data_scaled_start`: ``sqrt(d) std_j``), on the same
learning rows; it keeps the per-feature kernel only if its objective (the log evidence or
Titsias' bound on those ``n`` rows) beats the isotropic one by more than the Bayesian
information criterion's charge ``(d - 1) / 2 log n`` for the ``d - 1`` extra length scales
(:func:`~skgpsparse.kernels._scales.bic_charge`, the classifier's rule,
:func:`skgpsparse.classification._all_rows_fit._per_feature_choice`). Type-II maximum
likelihood alone always prefers more length scales; the charge approximates the integral
over them.

The per-feature fit does not start from the isotropic one's result: when a single length
scale cannot see the signal (pumadyn32nm: 4 of 32 inputs matter), the isotropic fit ends in
the noise-only model, where every length scale's gradient vanishes, and a start copied from
it stays there.
"""

import numpy as np

from ..kernels._scales import bic_charge, data_scaled_start, per_feature_length_scales
from ..rows._store import RowStore, row_centre

__all__ = ["feature_std", "learn_default_kernel", "per_feature_start"]

# The per-feature fit's subset start (the exact GP on a random subset, which sets the
# hyperparameters the basis is selected and refined from) uses at least this many rows per
# hyperparameter (the noise included). On 100 rows, pumadyn32nm's 34 hyperparameters fit the
# subset's noise, and the refinement from there ends in the noise-only model.
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


def learn_default_kernel(model, X, y, p, rng, learn_basis):
    """The fit of ``learn_basis`` with the default kernel's choice (the module docstring).

    ``learn_basis(model, X, y, p, rng, kernel=None)`` learns the basis and hyperparameters
    on the rows ``X, y`` from ``kernel`` (``None``: ``model.kernel_``) and returns a
    :class:`~._design.FittedBasis`. Only with ``kernel=None`` (the user's kernels are kept
    as given), hyperparameters learned, and no warm start (which keeps its kernel).
    """
    choose = (model.kernel is None and model.optimizer is not None
              and model.__dict__.get("_warm") is None)
    one = learn_basis(model, X, y, p, rng)
    start = per_feature_start(model.kernel_, X) if choose else None
    if start is None:
        return one
    # the subset start's exact GP, ROWS_PER_HYPERPARAMETER rows for each (at least)
    subset = ROWS_PER_HYPERPARAMETER * (start.n_dims + 1)
    per_feature = learn_basis(model, X, y, p, rng, kernel=start, subset=subset)
    n = X.shape[0]
    charge = bic_charge(start.n_dims - model.kernel_.n_dims, n)
    gain = float(per_feature.objective - one.objective)
    keep = gain > charge
    model._progress.line(
        f"one length scale per feature: objective {gain:+.2f} nats over one for all, BIC "
        f"charge {charge:.2f}: {'kept' if keep else 'not kept'}"
    )
    return per_feature if keep else one
