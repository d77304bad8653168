"""Row stores: the training rows cut into partitions, and the per-row state kept beside them.

A fit over data spread across machines cannot hold the ``n x p`` kernel block, the residuals
or the site quantities in one place. Its greedy loops touch the rows through a narrow
interface instead: run a function on every partition (append the new basis vector's kernel
column to the partition's state, score a working set's candidates against the partition's
rows, add up the partition's terms of an objective and its gradient) and reduce the small
results on the driver; fetch the rows of a few given indices (a working set, a new basis
vector). That interface is :class:`RowStore`:

``rows.map(fn, *args)``
    ``[fn(partition, *args) for partition in partitions]``, run where the partitions live
    (in parallel across them); ``fn`` is a module-level function, ``args`` small.
``rows.sum(fn, *args)``
    The same results added up on the driver, in partition order.
``rows.take(indices)``
    ``(X[indices], y[indices])`` for global row indices.
``rows.sum_and_fetch(fn, indices, *args)``
    ``rows.sum(fn, *args)`` and ``X[indices]`` in one call per partition: a step that knows
    which rows the next one needs fetches them with its own pass (one round trip less).

A :class:`RowPartition` holds one partition's ``X``, ``y`` and its first row's global index
(``offset``); a family keeps its per-row arrays in the partition's ``state`` dict between
calls. :class:`LocalRows` keeps the partitions in this process (the distributed driver logic
without a cluster, e.g. for tests); ``skgpsparse.rows._dask.DaskRows`` keeps each one in a
dask.distributed actor on a worker.

The in-memory fit does not go through a row store: its state keeps one fused array of columns
and its passes run over row chunks without a function call per partition and step. The
functions a partition runs are the same ones (``skgpsparse.regression._state.append_pass``,
``skgpsparse.regression._scoring.streaming_sums``), so the two fits do the same arithmetic
row by row; only the order of the additions across partitions differs.
"""

import numpy as np

__all__ = [
    "LocalRows", "RowPartition", "RowStore", "in_order", "read_only", "row_centre", "state_scope",
]


def state_scope(key, resets=False):
    """Mark a partition function as one that touches no per-row state but ``part.state[key]``.

    A store that journals its calls to rebuild lost partitions (``skgpsparse.rows._dask``)
    then forgets, at each call of a function marked ``resets=True`` (one that sets
    ``part.state[key]`` from its arguments and the rows alone), the earlier calls of that
    scope: their effect is overwritten, so the journal of a long fit stays as long as the
    calls since each scope's last reset. Unmarked functions are journalled for the whole fit
    and must not read a marked scope's state; a function that changes no state is marked
    :func:`read_only` instead and is not journalled.

    Examples
    --------
    >>> @state_scope("toy", resets=True)
    ... def _p_toy_init(part):
    ...     part.state["toy"] = 0
    >>> _p_toy_init.state_scope
    ('toy', True)
    """

    def mark(fn):
        fn.state_scope = (key, bool(resets))
        return fn

    return mark


def read_only(fn):
    """Mark a partition function that changes no per-row state (it may read it).

    A store that journals its calls to rebuild lost partitions does not keep such a call:
    replaying it would change nothing (an objective's pass over the rows alone, a fetch of
    some rows' values).

    Examples
    --------
    >>> @read_only
    ... def _p_toy_count(part):
    ...     return part.n
    >>> _p_toy_count.state_scope
    (None, None)
    """
    fn.state_scope = (None, None)
    return fn


class RowPartition:
    """One partition of the training rows and the per-row state a fit keeps on them.

    Parameters
    ----------
    X : ndarray of shape (n_rows, n_features)
    y : ndarray of shape (n_rows,) or (n_rows, n_targets), or None
    offset : int
        Global index of the partition's first row.
    """

    def __init__(self, X, y, offset):
        self.X = X
        self.y = y
        self.offset = int(offset)
        self.n = X.shape[0]
        self.state = {}

    def run(self, fn, *args):
        """``fn(self, *args)``: what a driver asks of this partition."""
        return fn(self, *args)


@read_only
def _take_rows(part, local):
    return part.X[local], (None if part.y is None else part.y[local])


class RowStore:
    """The driver's handle on row partitions (see the module docstring).

    Subclasses set ``offsets`` (``n_partitions + 1`` global row boundaries), ``n_features``,
    ``dtype`` (of ``X``) and ``target_shape`` (``y.shape[1:]``), implement :meth:`_call`, and
    :meth:`close` where the partitions hold resources.
    """

    offsets: np.ndarray

    @property
    def n(self):
        """Number of rows."""
        return int(self.offsets[-1])

    @property
    def shape(self):
        """``(n, n_features)`` of the rows."""
        return self.n, self.n_features

    @property
    def n_partitions(self):
        return len(self.offsets) - 1

    def _call(self, fn, args_per_partition):
        """``[fn(part_i, *args_i)]`` for the partitions ``i`` given as keys, in their order."""
        raise NotImplementedError

    def map(self, fn, *args):
        """``fn(partition, *args)`` on every partition; their results, in partition order."""
        return self._call(fn, {i: args for i in range(self.n_partitions)})

    def map_each(self, fn, args_per_partition):
        """``fn(partition_i, *args_i)`` for the partitions ``i`` of the dict's keys."""
        return self._call(fn, args_per_partition)

    def sum(self, fn, *args):
        """The results of :meth:`map` added up in partition order (arrays, floats, tuples)."""
        return _add_up(self.map(fn, *args))

    def split(self, indices):
        """``{partition: (positions in indices, local row indices)}`` of global ``indices``."""
        indices = np.asarray(indices, dtype=np.intp).reshape(-1)
        part = np.searchsorted(self.offsets, indices, side="right") - 1
        out = {}
        for i in np.unique(part):
            where = np.flatnonzero(part == i)
            out[int(i)] = (where, indices[where] - self.offsets[i])
        return out

    def gather(self, fn, indices, *args):
        """``fn(partition, local_indices, *args)`` per partition owning some of ``indices``.

        ``fn`` returns arrays (or a tuple of arrays) with one entry per local index; they are
        put back in the order of ``indices``.
        """
        parts = self.split(indices)
        keys = list(parts)
        results = self._call(fn, {i: (parts[i][1],) + args for i in keys})
        return in_order(results, keys, parts, len(np.ravel(indices)))

    def sum_and_fetch(self, fn, indices, *args):
        """``(self.sum(fn, *args), X[indices])`` from one call per partition.

        Each partition runs ``fn`` and returns its rows of ``indices`` with the result, so a
        step that knows which rows the next one needs (a pre-drawn working set) saves the
        :meth:`take` round trip. The sum is added up in partition order, as :meth:`sum`'s.
        """
        parts = self.split(indices)
        if not parts:
            return self.sum(fn, *args), np.empty((0, self.n_features), self.dtype)
        results = self._call(
            _run_and_fetch,
            {i: (fn, parts[i][1] if i in parts else None, args) for i in range(self.n_partitions)},
        )
        total = _add_up([r[0] for r in results])
        keys = list(parts)
        fetched = [results[i][1] for i in keys]
        return total, in_order(fetched, keys, parts, len(np.ravel(indices)))

    def take(self, indices):
        """``(X[indices], y[indices])`` fetched from the partitions that hold them."""
        return self.gather(_take_rows, indices)

    def close(self):
        """Release the partitions (and their state); a store is also a context manager."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def in_order(results, keys, parts, size):
    """The partitions' per-index ``results`` (arrays or tuples) put in the indices' order."""
    first = results[0]
    several = isinstance(first, tuple)
    outs = []
    for k in range(len(first) if several else 1):
        pieces = [r[k] if several else r for r in results]
        if pieces[0] is None:
            outs.append(None)
            continue
        out = np.empty((size,) + pieces[0].shape[1:], pieces[0].dtype)
        for i, piece in zip(keys, pieces):
            out[parts[i][0]] = piece
        outs.append(out)
    return tuple(outs) if several else outs[0]


def _run_and_fetch(part, fn, local, args):
    return fn(part, *args), (None if local is None else part.X[local])


def _add(a, b):
    return None if a is None else a + b


def _add_up(results):
    """The partitions' results (arrays, floats, tuples of them) added up in their order."""
    total = results[0]
    for r in results[1:]:
        total = (
            tuple(_add(a, b) for a, b in zip(total, r))
            if isinstance(total, tuple)
            else _add(total, r)
        )
    return total


class LocalRows(RowStore):
    """Row partitions in this process (numpy arrays cut into consecutive row ranges).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,) or (n_samples, n_targets), or None
    partition_rows : int
        Rows per partition (the last one may have fewer).

    Examples
    --------
    >>> import numpy as np
    >>> from skgpsparse.rows._store import LocalRows
    >>> rows = LocalRows(np.arange(10.0).reshape(5, 2), np.arange(5.0), partition_rows=2)
    >>> rows.n_partitions, float(rows.sum(lambda part: part.y.sum()))
    (3, 10.0)
    >>> rows.take([4, 0])[1].tolist()
    [4.0, 0.0]
    >>> total, X_rows = rows.sum_and_fetch(lambda part: part.y.sum(), [3])
    >>> float(total), X_rows.tolist()
    (10.0, [[6.0, 7.0]])
    """

    def __init__(self, X, y, partition_rows):
        n = X.shape[0]
        step = max(1, int(partition_rows))
        self.offsets = np.array(list(range(0, n, step)) + [n], dtype=np.intp)
        self.partitions = [
            RowPartition(X[a:b], None if y is None else y[a:b], a)
            for a, b in zip(self.offsets[:-1], self.offsets[1:])
        ]
        self.n_features, self.dtype = X.shape[1], X.dtype
        self.target_shape = () if y is None else y.shape[1:]
        self.bytes_sent = self.bytes_received = 0

    def _call(self, fn, args_per_partition):
        return [self.partitions[i].run(fn, *args) for i, args in args_per_partition.items()]

    def close(self):
        self.partitions = []


@read_only
def _column_sums(part):
    return np.sum(part.X, axis=0, dtype=np.float64)


def row_centre(rows):
    """The mean training row, from the partitions' column sums (the kernel columns' centre)."""
    return rows.sum(_column_sums) / rows.n
