"""A cheap check of prediction inputs that scikit-learn's validation would pass unchanged.

scikit-learn's ``validate_data`` costs tens of microseconds per call whatever the size of
``X`` (input-type dispatch, dataframe probes, feature-name and tag look-ups; 0.13-0.4 ms in a
Bayesian-optimisation loop), more than a sparse model's arithmetic on one row, and a tenth
of a regressor's prediction at 2,000 rows on a basis of a few dozen. :func:`plain_float_rows`
recognises the common input, a finite float ``ndarray`` of the fitted width, for which
``validate_data(estimator, X, reset=False, dtype=np.float64)`` would return ``X`` itself
(``float64``) or its ``float64`` cast (``float32``) and neither warn nor raise. Every other
input goes to ``validate_data``, so errors and warnings stay scikit-learn's.
"""

import numpy as np

__all__ = ["plain_float_rows"]

_FLOAT_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))


def plain_float_rows(estimator, X):
    """``X`` as ``validate_data(estimator, X, reset=False, dtype=np.float64)`` returns it, or None.

    Returns the array when ``X`` is exactly an ``ndarray`` (no subclass, no dataframe) of
    ``float64`` or ``float32``, two-dimensional, with at least one row, as many columns as
    ``estimator.n_features_in_``, a finite sum (so only finite values; a sum that overflows
    leaves the check to ``validate_data``, as a NaN or inf does), and the estimator was fitted
    without feature names (else scikit-learn warns about the missing names). For such an
    ``X`` scikit-learn's checks all pass and its conversion is ``X`` itself or
    ``X.astype(np.float64)``, which is what this returns. Returns ``None`` for every other
    input: the caller then validates it with ``validate_data``, which raises or warns as
    scikit-learn does. Whether the estimator is fitted is the caller's check.

    Parameters
    ----------
    estimator : fitted scikit-learn estimator
    X : object
        The prediction input, as the user passed it.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features_in_) or None
        ``float64``; the user's own array when it was ``float64`` (never written to).
    """
    if (
        type(X) is not np.ndarray
        or X.ndim != 2
        or X.dtype not in _FLOAT_DTYPES
        or not X.shape[0] > 0
        or X.shape[1] != getattr(estimator, "n_features_in_", -1)
        or hasattr(estimator, "feature_names_in_")
    ):
        return None
    with np.errstate(over="ignore"):  # an overflowing sum is left to validate_data
        if not np.isfinite(X.sum()):  # one pass, no array of X's size (as scikit-learn's)
            return None
    return X if X.dtype == np.float64 else X.astype(np.float64)

