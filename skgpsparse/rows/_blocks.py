"""Predictions by blocks of rows, so that a predict call's working memory does not grow with rows.

A public predict method validates its input once, then computes its output block by block of
rows into arrays allocated once (:func:`map_row_blocks`): what it holds beyond the input and
the output is one block's arrays, about 32 MB by default (:func:`block_rows`), whatever the
number of rows. Every row's output depends only on that row, so the blocks give the same
numbers as one call on the whole array.
"""

import numpy as np

from ..kernels._gradients import chunk_rows, row_blocks

__all__ = ["block_rows", "map_row_blocks"]


def block_rows(n_columns):
    """Rows per block so that a ``(rows, n_columns)`` float64 array takes about 32 MB.

    The budget is the kernel layer's (``chunk_rows``), the one the sparse GP estimators'
    prediction blocks use.
    """
    return chunk_rows(None, n_columns, 1)


def map_row_blocks(func, X, n_rows):
    """``func(X)`` computed on blocks of ``n_rows`` rows of ``X``, into preallocated outputs.

    Parameters
    ----------
    func : callable
        ``func(X_block)`` returns an array, or a tuple of arrays, whose first axis runs over
        the block's rows (and whose other axes, and dtypes, do not depend on the block).
    X : ndarray of shape (n_samples, n_features)
        The validated input.
    n_rows : int
        Rows per block (>= 1).

    Returns
    -------
    out : ndarray or tuple of ndarrays
        What ``func(X)`` returns. An ``X`` of at most one block is passed to ``func`` whole.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.rows._blocks import map_row_blocks
    >>> X = np.arange(10.0).reshape(5, 2)
    >>> mean, total = map_row_blocks(lambda B: (B.mean(axis=1), B.sum(axis=1)), X, 2)
    >>> mean, total
    (array([0.5, 2.5, 4.5, 6.5, 8.5]), array([ 1.,  5.,  9., 13., 17.]))
    """
    n = X.shape[0]
    if n <= n_rows:
        return func(X)
    outs, single = None, True
    for rows in row_blocks(X, n_rows):
        result = func(X[rows])
        single = not isinstance(result, tuple)
        parts = (result,) if single else result
        if outs is None:
            outs = [np.empty((n,) + part.shape[1:], dtype=part.dtype) for part in parts]
        for out, part in zip(outs, parts):
            out[rows] = part
    return outs[0] if single else tuple(outs)
