"""Row weights of a fit: ``sample_weight`` times the classes' ``class_weight`` (scikit-learn).

A row of integer weight ``c`` counts as ``c`` copies of itself and a row of weight zero as
absent: the classifier's engines carry the weights as copies (EP,
:mod:`skgpsparse.inference._ep_passes`), and rows of weight zero are dropped before any of them
runs, so that removal is exact. :func:`fit_weights` validates the weights with scikit-learn's
``_check_sample_weight`` (never modifying the caller's array), multiplies in the class weights
(``compute_class_weight``, whose ``"balanced"`` counts each class by its summed sample weight,
so that weights and repeated rows stay equivalent) and returns ``None`` when every weight is one:
the unweighted fit then runs its own code unchanged.
"""

import numpy as np
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.validation import _check_sample_weight

__all__ = [
    "distinct_rows", "fit_weights", "positive_rows", "refuse_weights", "total_weight",
    "weighted_mean", "weighted_rows", "weighted_std",
]


def fit_weights(sample_weight, X, y=None, class_weight=None):
    """The rows' weights, or None when every one is 1 (an unweighted fit).

    Parameters
    ----------
    sample_weight : array-like of shape (n_samples,) or None
        Non-negative weights (None: ones).
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,), default=None
        The labels, needed with ``class_weight``.
    class_weight : dict, "balanced" or None, default=None
        Each class's weight (scikit-learn's ``class_weight``), multiplied into the rows'.

    Returns
    -------
    weights : ndarray of shape (n_samples,) or None
        A new array (the caller's is never modified).

    Raises
    ------
    ValueError
        If a weight is negative or not finite, the length is not ``n_samples``, or every
        weight is zero (naming ``sample_weight``).

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse._row_weights import fit_weights
    >>> X, y = np.zeros((4, 1)), np.array([0, 0, 0, 1])
    >>> fit_weights(None, X) is None, fit_weights([1, 2, 0, 1], X).tolist()
    (True, [1.0, 2.0, 0.0, 1.0])
    >>> fit_weights(None, X, y, "balanced").round(3).tolist()
    [0.667, 0.667, 0.667, 2.0]
    """
    if sample_weight is None and class_weight is None:
        return None
    weights = _check_sample_weight(
        sample_weight, X, dtype=np.float64, ensure_non_negative=True, copy=True
    )
    if not np.all(np.isfinite(weights)):
        raise ValueError("sample_weight must be finite; got a NaN or an infinite weight.")
    if class_weight is not None:
        classes = np.unique(y)
        per_class = compute_class_weight(
            class_weight, classes=classes, y=y,
            sample_weight=None if sample_weight is None else weights,
        )
        weights *= per_class[np.searchsorted(classes, y)]
    if not np.any(weights > 0):
        raise ValueError(
            "sample_weight (times class_weight) is zero for every row: nothing to fit."
        )
    return None if np.all(weights == 1.0) else weights


def positive_rows(sample_weight, X):
    """``(weights, kept)``: the weights of the rows of positive weight (None when those are
    all one) and the indices of those rows in ``X`` (None when every row is kept); a zero
    weight removes its row exactly (:func:`fit_weights` checks the weights).

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse._row_weights import positive_rows
    >>> weights, kept = positive_rows([2, 0, 1], np.zeros((3, 1)))
    >>> weights.tolist(), kept.tolist(), positive_rows([1, 0, 1], np.zeros((3, 1)))[0]
    ([2.0, 1.0], [0, 2], None)
    """
    weights = fit_weights(sample_weight, X)
    if weights is None:
        return None, None
    kept = None
    if not np.all(weights > 0):
        kept = np.flatnonzero(weights > 0)
        weights = weights[kept]
    return (None if np.all(weights == 1.0) else weights), kept


def weighted_rows(X, y, sample_weight, class_weight=None):
    """``(X, y, weights, kept)`` of a fit: the rows of positive weight, their weights
    (:func:`fit_weights`; None when those are all one) and their indices in ``X`` (None when
    every row is kept): a zero weight removes its row exactly (it is dropped here).

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse._row_weights import weighted_rows
    >>> X, y = np.arange(4.0)[:, None], np.array([0, 1, 0, 1])
    >>> X_w, y_w, w, kept = weighted_rows(X, y, [2, 0, 1, 1])
    >>> X_w.ravel().tolist(), w.tolist(), kept.tolist()
    ([0.0, 2.0, 3.0], [2.0, 1.0, 1.0], [0, 2, 3])
    >>> weighted_rows(X, y, [1, 0, 1, 1])[2] is None
    True
    """
    weights = fit_weights(sample_weight, X, y, class_weight)
    if weights is None:
        return X, y, None, None
    kept = None
    if not np.all(weights > 0):
        kept = np.flatnonzero(weights > 0)
        X, y, weights = X[kept], y[kept], weights[kept]
    return X, y, (None if np.all(weights == 1.0) else weights), kept


def distinct_rows(X, y, weights, max_basis):
    """``(X, y, weights, index)``: rows repeating another row exactly (input and target)
    taken once with their summed weight, in lexicographic order, when at most ``max_basis``
    rows are distinct (a basis can then hold every one).

    A row repeated ``c`` times is one row of weight ``c``; taking the distinct rows in a fixed
    order makes the same rows, repeated or weighted, in any order, one computation (a fit
    that holds every row in its basis would otherwise select among twins of its basis rows,
    whose gain is zero but for the jitter). ``index`` is each row's first position in the
    arguments; None, and the arguments unchanged, when there is nothing to do: more distinct
    rows than ``max_basis``, or no repeated rows nor weights, or ``X`` not a float array.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse._row_weights import distinct_rows
    >>> X, y = np.array([[1.0], [0.0], [1.0], [1.0]]), np.array([1, 0, 1, 1])
    >>> X_d, y_d, w, index = distinct_rows(X, y, None, max_basis=3)
    >>> X_d.ravel().tolist(), w.tolist(), index.tolist()
    ([0.0, 1.0], [1.0, 3.0], [1, 0])
    """
    n = X.shape[0]
    if (not isinstance(X, np.ndarray) or X.dtype.kind != "f"
            or (n <= max_basis and weights is None)):
        return X, y, weights, None
    def rows(stop):  # the rows' inputs and targets, one row each
        return np.column_stack([X[:stop].astype(np.float64), np.reshape(y[:stop], (stop, -1))])

    # more than max_basis distinct rows among the first max_basis + 1 (continuous inputs):
    # no sort of all n rows, on every fit
    if n > max_basis and np.unique(rows(max_basis + 1), axis=0).shape[0] > max_basis:
        return X, y, weights, None
    _, first, group = np.unique(rows(n), axis=0, return_index=True, return_inverse=True)
    if first.size > max_basis or (first.size == n and weights is None):
        return X, y, weights, None
    ones = np.ones(n) if weights is None else weights
    summed = np.bincount(group.ravel(), weights=ones, minlength=first.size)
    return X[first], y[first], summed, first


def total_weight(n, weights):
    """``n`` (the rows) without weights, else their sum: the number of rows they stand for."""
    return n if weights is None else float(np.sum(weights))


def weighted_mean(values, weights):
    """``np.mean(values)``, or its weighted average (the mean over the rows' copies)."""
    return np.mean(values) if weights is None else np.average(values, weights=weights)


def weighted_std(X, weights):
    """Each feature's standard deviation over the rows' copies (``np.std`` without weights)."""
    if weights is None:
        return np.std(X, axis=0)
    mean = np.average(X, axis=0, weights=weights)
    return np.sqrt(np.average((X - mean) ** 2, axis=0, weights=weights))


def refuse_weights(estimator, sample_weight, option, advice="repeat the rows instead"):
    """Raise a ValueError naming ``option`` when weights were given to a fit that does not
    take them (``sample_weight``, or the estimator's ``class_weight``), with ``advice``."""
    class_weight = getattr(estimator, "class_weight", None)
    if sample_weight is None and class_weight is None:
        return
    given = "sample_weight" if sample_weight is not None else f"class_weight={class_weight!r}"
    raise ValueError(
        f"{type(estimator).__name__}: {option} does not take sample_weight or class_weight "
        f"(got {given}); {advice}."
    )
