"""Row backends: the array types whose rows live in partitions, and the one place that picks one.

The estimators take their training rows as one in-memory array, or as an array whose rows a
row backend holds in partitions (a dask array today). ``fit``, ``predict`` and
``partial_fit`` ask :func:`backend_for` which it is, once: ``None`` for an in-memory array,
else the :class:`RowBackend` that owns the array and answers every question the fit and the
prediction have about it (check it, open a :class:`~._store.RowStore` on it, reduce it,
predict on it partition by partition). No estimator tests for an array type itself.

A new backend is a subclass of :class:`RowBackend` in a module of this package (its arrays,
its :class:`~._store.RowStore`) and one :func:`register_backend` call in ``rows/__init__.py``;
the estimators do not change. ``tests/test_row_backend.py`` adds one in the test file.
"""

import functools

__all__ = [
    "RowBackend", "backend_for", "in_memory_only", "predicts_by_partition", "register_backend",
    "unregister_backend",
]

_BACKENDS = []


class RowBackend:
    """An array type whose rows live in partitions, as the estimators see it.

    Its arrays have ``shape``, ``ndim`` and ``dtype`` and take elementwise arithmetic with
    numpy scalars and row vectors (the regressor normalises its targets so), lazily or not.

    Attributes
    ----------
    name : str
        The arrays in messages, with their article (``"a dask array"``).
    """

    name = "a partitioned array"

    def owns(self, a):
        """Whether ``a`` is one of this backend's arrays (cheap: every predict call asks)."""
        raise NotImplementedError

    def validate(self, X, y, *, min_rows, dtypes, labels):
        """``(X, y, classes)``: the training arrays checked, in one pass over the rows.

        ``X`` must be this backend's (a ``TypeError`` otherwise: ``y`` was), 2-D with at
        least ``min_rows`` rows and one column, and is converted to ``dtypes[0]`` unless its
        dtype is one of ``dtypes``; ``y`` (the backend's or in memory) is partitioned as
        ``X``'s rows, with shape ``(n,)`` or ``(n, n_targets)``. ``X``'s values must be
        finite (a ``ValueError`` otherwise). ``labels``: ``y`` holds class labels (1-D), and
        ``classes`` their sorted distinct values; else ``y`` holds targets, converted to
        float64 and checked finite too, and ``classes`` is None.
        """
        raise NotImplementedError

    def gather(self, a):
        """``a`` as one in-memory ndarray (only for arrays the driver may hold)."""
        raise NotImplementedError

    def moments(self, y):
        """``(mean, std)`` of ``y`` over its rows (ndarrays, float64), without gathering it."""
        raise NotImplementedError

    def open(self, X, y):
        """A :class:`~._store.RowStore` on the partitions of ``X`` and ``y`` (a context
        manager that releases them)."""
        raise NotImplementedError

    def map_rows(self, fn, X):
        """``fn`` applied to each row partition of ``X``, as this backend's array(s).

        ``fn(block)`` returns an array whose first axis is the block's rows, or a tuple of
        them; the result is the backend's array (or a tuple of them) of ``X``'s rows, lazy
        where the backend is.
        """
        raise NotImplementedError


def register_backend(backend):
    """Add ``backend`` (a :class:`RowBackend` instance) to the ones :func:`backend_for` asks;
    returns it."""
    if not isinstance(backend, RowBackend):
        raise TypeError(f"`backend` must be a RowBackend, got {type(backend).__name__}.")
    if backend not in _BACKENDS:
        _BACKENDS.append(backend)
    return backend


def unregister_backend(backend):
    """Remove ``backend`` from the registered ones (a test's own backend, when it ends)."""
    if backend in _BACKENDS:
        _BACKENDS.remove(backend)


def backend_for(X, y=None):
    """The registered :class:`RowBackend` that owns ``X`` (or ``y``); None for arrays in memory.

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.rows import backend_for
    >>> backend_for(np.zeros((3, 2))) is None
    True
    """
    for backend in _BACKENDS:
        if backend.owns(X) or (y is not None and backend.owns(y)):
            return backend
    return None


def in_memory_only(X, y, method):
    """Raise a ``TypeError`` when ``X`` or ``y`` is a backend's array: ``method`` (a stream's
    ``partial_fit``) takes in-memory batches."""
    backend = backend_for(X, y)
    if backend is not None:
        raise TypeError(
            f"{method} takes in-memory batches (numpy arrays), got {backend.name}: pass its "
            "row chunks one at a time (in memory), or fit on the whole array."
        )


def predicts_by_partition(method):
    """Make the predict ``method(self, X, ...)`` take a backend's ``X`` too, lazily.

    On such an ``X`` the method runs on each row partition (the fitted model shipped with
    each task, as :meth:`RowBackend.map_rows` does) and returns the backend's arrays chunked
    as ``X``'s rows; on any other ``X`` it is ``method`` itself.
    """

    @functools.wraps(method)
    def predict(self, X, *args, **kwargs):
        backend = backend_for(X)
        if backend is None:
            return method(self, X, *args, **kwargs)
        # the bound (wrapped) method: pickled by name, and in memory on each partition
        bound = getattr(self, method.__name__)
        return backend.map_rows(functools.partial(bound, *args, **kwargs) if args or kwargs
                                else bound, X)

    return predict
