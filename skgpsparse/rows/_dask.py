"""Row partitions on a dask.distributed cluster: one actor per row chunk of a dask array.

A fit over a ``dask.array`` keeps each row chunk's ``X``, ``y`` and per-row state (kernel
columns against the basis, Nystrom errors, ...) in a :class:`~skgpsparse.rows._store.RowPartition`
created as a dask.distributed *actor* on the worker that holds the chunk. Each greedy step
then sends every actor a few small arrays (the new basis vector, the current weights) and
gets back a few small ones (partial sums of the candidates' scores).

Why actors, not persisted collections: the per-row state changes at every step (a column is
appended to the kernel block, the Nystrom errors shrink). A persisted dask array is
immutable: each step would make a new collection from the previous one, so the scheduler
would track ``O(steps x chunks)`` tasks and keep or recompute the earlier states, and every
step would pay the scheduler's task overhead (graph submission, a round trip per task). An
actor is a plain Python object living in a worker's memory: its state changes in place and a
method call is one message to the worker and one back. The price is that the actor's state is
not resilient: if a worker dies during a fit, the fit fails (rerun it).

A worker runs its actors' methods on one thread, so a worker holding several chunks runs them
one after another; rechunk to about one chunk per worker (or a few) for parallelism.

dask and distributed are imported only here, and this module only when a dask array is passed.
"""

import pickle
import sys

import numpy as np

from ._store import RowPartition, RowStore

__all__ = ["DaskRows", "is_dask_array", "lazy_predict", "row_chunked"]


def is_dask_array(X):
    """Whether ``X`` is a ``dask.array.Array`` (False without importing dask)."""
    da = sys.modules.get("dask.array")
    return da is not None and isinstance(X, da.Array)


def _client():
    try:
        from distributed import get_client
    except ImportError as exc:  # pragma: no cover - dask.array without distributed
        raise ImportError(
            "Fitting on a dask array needs dask.distributed: pip install "
            "'scikit-gp-sparse[dask]' (or dask[distributed])."
        ) from exc
    try:
        return get_client()
    except ValueError as exc:
        raise ValueError(
            "Fitting on a dask array needs an active dask.distributed Client (for example "
            "`distributed.Client(cluster)`); none was found."
        ) from exc


def row_chunked(X, y, name_x="X", name_y="y"):
    """``X`` with one chunk across the columns and ``y`` chunked by ``X``'s row chunks."""
    if X.ndim != 2:
        raise ValueError(f"`{name_x}` must be a 2-D dask array, got {X.ndim} dimensions.")
    if any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError(
            f"`{name_x}` has unknown chunk sizes (e.g. from a dask DataFrame); call "
            f"`{name_x}.compute_chunk_sizes()` or `to_dask_array(lengths=True)` first."
        )
    # one chunk across the columns, and no empty row chunk (a partition without rows)
    X = X.rechunk({0: tuple(c for c in X.chunks[0] if c) or (0,), 1: -1})
    if y is not None:
        if y.ndim not in (1, 2) or y.shape[0] != X.shape[0]:
            raise ValueError(
                f"`{name_y}` must have shape ({X.shape[0]},) or ({X.shape[0]}, n_targets) to "
                f"match `{name_x}`, got shape {y.shape}."
            )
        y = y.rechunk({0: X.chunks[0]} if y.ndim == 1 else {0: X.chunks[0], 1: -1})
    return X, y


class DaskRows(RowStore):
    """Row partitions held by dask.distributed actors, one per row chunk of ``X``.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
        Chunked by rows (columns are put in one chunk).
    y : dask.array.Array of shape (n_samples,) or (n_samples, n_targets), or None
        Rechunked to ``X``'s row chunks.

    The chunks are computed on the cluster and handed to the actors there (never through the
    driver). ``bytes_sent`` and ``bytes_received`` count the pickled arguments and results of
    the calls made since creation (what crosses the network between driver and workers).
    Use as a context manager, or call :meth:`close`, to release the actors.
    """

    def __init__(self, X, y):
        client = _client()
        X, y = row_chunked(X, y)
        self.client = client
        self.offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.intp)
        self.n_features, self.dtype = X.shape[1], X.dtype
        self.target_shape = () if y is None else y.shape[1:]
        x_blocks = client.compute(list(X.to_delayed().ravel()))
        y_blocks = (
            [None] * len(x_blocks) if y is None else client.compute(list(y.to_delayed().ravel()))
        )
        self._actor_futures = [
            client.submit(RowPartition, xb, yb, int(a), actor=True, pure=False)
            for xb, yb, a in zip(x_blocks, y_blocks, self.offsets[:-1])
        ]
        self.actors = [f.result() for f in self._actor_futures]
        del x_blocks, y_blocks  # the actors hold the chunks now
        self.bytes_sent = self.bytes_received = 0
        self.calls = 0

    def _call(self, fn, args_per_partition):
        futures = []
        for i, args in args_per_partition.items():
            self.bytes_sent += len(pickle.dumps((fn, args), protocol=5))
            futures.append(self.actors[i].run(fn, *args))
        results = [f.result() for f in futures]
        self.bytes_received += sum(len(pickle.dumps(r, protocol=5)) for r in results)
        self.calls += 1
        return results

    def close(self):
        """Release the actors (and with them the partitions' data and state)."""
        self.actors = []
        if self._actor_futures:
            self.client.cancel(self._actor_futures)
        self._actor_futures = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def lazy_predict(fn, X):
    """``fn`` applied to each row chunk of the dask array ``X``, lazily.

    ``fn(block)`` returns an array whose first axis is the block's rows, or a tuple of them
    (as ``predict(X, return_std=True)``); the result is a row-chunked dask array (or a tuple
    of them, computed together from one task per chunk). The trailing shapes and dtypes come
    from ``fn`` on one row of zeros. Nothing is computed on ``X`` here.
    """
    import dask
    import dask.array as da

    X, _ = row_chunked(X, None)
    probe = fn(np.zeros((1, X.shape[1]), dtype=X.dtype))
    several = isinstance(probe, tuple)
    probes = probe if several else (probe,)
    tasks = [dask.delayed(fn, pure=True)(block) for block in X.to_delayed().ravel()]
    outs = []
    for k, ref in enumerate(probes):
        ref = np.asarray(ref)
        parts = [
            da.from_delayed(
                task[k] if several else task, shape=(rows,) + ref.shape[1:], dtype=ref.dtype
            )
            for task, rows in zip(tasks, X.chunks[0])
        ]
        outs.append(da.concatenate(parts, axis=0))
    return tuple(outs) if several else outs[0]
