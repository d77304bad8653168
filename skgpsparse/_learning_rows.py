"""The rows that learning sees at scale: the estimators' ``learning_rows`` parameter.

Learning the hyperparameters (and the regressor's basis inputs) evaluates an objective over
the training rows tens to hundreds of times; at 10^6 rows each evaluation is a pass over an
``n x max_basis`` block. Their values are settled by far fewer rows than that (a handful of
kernel hyperparameters, ``max_basis x d`` basis inputs), so above a threshold the estimators
learn on a random subsample and then form the final posterior, the calibration and (for the
classifier) EP on every row: each of those is a few passes, not one per evaluation
(DESIGN.md, "At scale"). Below the threshold nothing changes, and no random number is drawn.
"""

import numbers

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

__all__ = [
    "AUTO_MIN_ROWS", "AUTO_ROWS_PER_BASIS", "LEARNING_ROWS_OPTIONS", "check_learning_rows",
    "learning_subsample", "with_basis_rows",
]

# "auto": learn on m = max(AUTO_MIN_ROWS, AUTO_ROWS_PER_BASIS * max_basis) rows when there
# are more (benchmarks/scale/results/million.md measures it against learning on every
# row).
AUTO_MIN_ROWS = 20_000
AUTO_ROWS_PER_BASIS = 200

# The estimators' ``_parameter_constraints`` entry of ``learning_rows``.
LEARNING_ROWS_OPTIONS = [Interval(numbers.Integral, 1, None, closed="left"),
                         StrOptions({"auto"}), None]


def check_learning_rows(learning_rows):
    """Check the ``learning_rows`` parameter: ``"auto"``, ``None`` or an int >= 1."""
    if learning_rows is None or (isinstance(learning_rows, str) and learning_rows == "auto"):
        return learning_rows
    if isinstance(learning_rows, numbers.Integral) and not isinstance(learning_rows, bool):
        if learning_rows >= 1:
            return int(learning_rows)
    raise ValueError(
        "The 'learning_rows' parameter must be 'auto', None or an int >= 1; got "
        f"{learning_rows!r}."
    )


def learning_size(learning_rows, max_basis):
    """The number of rows learning uses under ``learning_rows`` (``None``: every row)."""
    learning_rows = check_learning_rows(learning_rows)
    if learning_rows is None:
        return None
    if learning_rows == "auto":
        return max(AUTO_MIN_ROWS, AUTO_ROWS_PER_BASIS * int(max_basis))
    return max(learning_rows, int(max_basis))


def learning_subsample(learning_rows, n, max_basis, rng):
    """Sorted indices of the rows to learn on, or ``None`` to learn on all ``n`` of them.

    Parameters
    ----------
    learning_rows : "auto", int or None
        ``None``: every row. An int ``m``: ``max(m, max_basis)`` rows drawn uniformly without
        replacement when ``n`` is larger, else every row. ``"auto"``: ``m =
        max(20000, 200 * max_basis)``.
    n : int
        Number of training rows.
    max_basis : int
        The basis size (the subsample never holds fewer rows).
    rng : numpy.random.RandomState
        Draws the subsample, only when one is drawn (``rng`` is untouched otherwise).

    Returns
    -------
    indices : ndarray of int or None

    Examples
    --------
    >>> import numpy as np
    >>> learning_subsample("auto", 1000, 100, np.random.RandomState(0)) is None
    True
    >>> rows = learning_subsample(500, 10_000, 100, np.random.RandomState(0))
    >>> rows.shape, bool(np.all(np.diff(rows) > 0))
    ((500,), True)
    """
    m = learning_size(learning_rows, max_basis)
    if m is None or n <= m:
        return None
    return np.sort(rng.choice(n, size=m, replace=False))


def with_basis_rows(rows, bases):
    """The learning ``rows`` joined by a warm start's ``bases`` (indices of every row, one
    array or ``None`` each): ``(rows, bases)``, the second each basis's positions in the
    first.

    A warm start's first selection begins from the last fit's basis, which must be among the
    rows it selects from.

    Examples
    --------
    >>> import numpy as np
    >>> rows, (basis, none) = with_basis_rows(np.array([2, 5, 9]), [np.array([5, 7]), None])
    >>> rows.tolist(), basis.tolist(), none
    ([2, 5, 7, 9], [1, 2], None)
    """
    given = [np.asarray(b) for b in bases if b is not None]
    if given:
        rows = np.union1d(rows, np.concatenate(given))
    return rows, [None if b is None else np.searchsorted(rows, b) for b in bases]
