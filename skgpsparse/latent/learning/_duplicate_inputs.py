"""Rows with the same input: under the all-rows posterior one of them is a basis vector at most.

Under ``posterior="all_rows"`` a basis vector is an inducing input of the sparse prior, not a
likelihood term: a second row with the same input would add a copy of an inducing input (a
singular ``K_uu``, held up by jitter) and nothing to the prior. The selection's ADF state still
offers such a twin (its posterior variance after one copy's site is not zero), so the selection
keeps the twins of every basis row out of the candidates. This also makes a row of integer
``sample_weight`` ``c`` and ``c`` repeated rows select the same basis (scikit-learn's meaning of
weights, :mod:`skgpsparse._row_weights`). On data without repeated rows nothing changes.
"""

import numpy as np

__all__ = ["DuplicateInputs"]


class DuplicateInputs:
    """The groups of rows of ``X`` with the same input, for the selection's exclusion.

    Parameters
    ----------
    X : ndarray of shape (n, n_features)

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.latent.learning._duplicate_inputs import DuplicateInputs
    >>> twins = DuplicateInputs(np.array([[0.0], [1.0], [0.0], [2.0]]))
    >>> twins.any, twins.of(0).tolist(), twins.of(1).tolist()
    (True, [0, 2], [1])
    """

    def __init__(self, X):
        X = np.asarray(X)
        self.groups = None
        if X.ndim != 2 or X.shape[0] < 2 or X.dtype.kind not in "fiub":
            return
        # rows with equal bytes have equal projections: distinct projections (continuous
        # inputs) rule twins out after one sort of n floats, not of n rows' bytes
        key = np.sort(X.astype(np.float64, copy=False) @ np.sqrt(np.arange(2.0, X.shape[1] + 2)))
        if np.all(key[1:] != key[:-1]):
            return
        # each row's bytes as one item: np.unique sorts them once, O(n log n)
        rows = np.ascontiguousarray(X).view(np.dtype((np.void, X.dtype.itemsize * X.shape[1])))
        _, inverse, counts = np.unique(rows.ravel(), return_inverse=True, return_counts=True)
        if counts.max() > 1:
            self.groups = inverse.ravel()

    @property
    def any(self):
        """Whether some input is repeated."""
        return self.groups is not None

    def of(self, j):
        """The rows with row ``j``'s input (``j`` included)."""
        if self.groups is None:
            return np.array([j])
        return np.flatnonzero(self.groups == self.groups[j])
