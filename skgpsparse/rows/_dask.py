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
method call is one message to the worker and one back.

An actor's state lives only in its worker's memory, so the row store makes it recoverable:
every call sent to a partition is kept, pickled, in that partition's journal on the driver
(what the driver sent: the basis vectors, small vectors, kernels; never the rows). When a call
finds its partition's worker gone (killed, out of memory, a reclaimed machine), the store
recomputes the partition's chunk from the dask graph on a surviving worker, creates a new
actor there, replays the journal in one round trip and runs the call again. The partition
functions are deterministic, so the rebuilt state, and the finished model, are the ones an
undisturbed fit has. Recovery costs the lost partitions' share of the row work done so far;
the driver is not recoverable (its factors are the fit). The journal forgets what is
overwritten: a partition function marked with :func:`~skgpsparse.rows._store.state_scope`
``(key, resets=True)`` (a new selection state, an objective evaluation's first pass) drops the
partition's earlier calls of that scope, so over hundreds of objective evaluations it holds
the calls since each scope's last reset, not every call of the fit; a function marked
:func:`~skgpsparse.rows._store.read_only` (an objective's pass over the rows alone, a fetch)
changes no state and is not journalled.

A worker runs its actors' methods on one thread, so a worker holding several chunks runs them
one after another; rechunk to about one chunk per worker (or a few) for parallelism.

:class:`DaskBackend` is what the estimators see of all this (``rows._backend``): it checks a
dask array and its targets or labels, reduces them on the cluster, opens a :class:`DaskRows`
on them and predicts lazily by row chunk (:func:`lazy_predict`).

dask and distributed are imported only here, and only when a dask array is passed.
"""

import pickle
import sys
import time

import numpy as np

from ._backend import RowBackend
from ._store import RowPartition, RowStore, _run_and_fetch

__all__ = ["DaskBackend", "DaskRows", "is_dask_array", "lazy_predict", "row_chunked"]


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


# What an actor call raises when the worker holding the actor is gone: OSError ("Unable to
# contact Actor's worker", a closed comm) while it dies, RuntimeError ("Worker holding Actor
# was lost") once the scheduler knows. An exception of the partition function itself is
# re-raised unless the actor is in fact lost (see DaskRows._is_lost).
_LOST_ERRORS = (OSError, RuntimeError)


def _replay(part, payloads):
    """Run the pickled calls ``payloads`` on ``part`` in order; the last call's result."""
    result = None
    for payload in payloads:
        fn, args = pickle.loads(payload)
        result = fn(part, *args)
    return result


class DaskRows(RowStore):
    """Row partitions held by dask.distributed actors, one per row chunk of ``X``.

    Parameters
    ----------
    X : dask.array.Array of shape (n_samples, n_features)
        Chunked by rows (columns are put in one chunk).
    y : dask.array.Array of shape (n_samples,) or (n_samples, n_targets), or None
        Rechunked to ``X``'s row chunks.
    lost_timeout : float, default=30.0
        Seconds to wait, after a call failed with a communication error, for the scheduler
        to say whether the partition's worker is gone (then the partition is rebuilt) or not
        (then the error is re-raised).

    The chunks are computed on the cluster and handed to the actors there (never through the
    driver). ``bytes_sent`` and ``bytes_received`` count the pickled arguments and results of
    the calls made since creation (what crosses the network between driver and workers);
    ``journal_bytes`` is what the driver keeps now to rebuild a lost partition
    (``journal_peak`` its largest value so far), ``recoveries``
    and ``recovery_seconds`` count the partitions rebuilt and the time spent on them.
    Use as a context manager, or call :meth:`close`, to release the actors.
    """

    def __init__(self, X, y, *, lost_timeout=30.0):
        client = _client()
        X, y = row_chunked(X, y)
        self.client = client
        self.lost_timeout = float(lost_timeout)
        self.offsets = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(np.intp)
        self.n_features, self.dtype = X.shape[1], X.dtype
        self.target_shape = () if y is None else y.shape[1:]
        # the graph of each chunk, kept to recompute a partition whose worker is lost
        self._x_parts = list(X.to_delayed().ravel())
        self._y_parts = [None] * len(self._x_parts) if y is None else list(y.to_delayed().ravel())
        x_blocks = client.compute(self._x_parts)
        y_blocks = [None] * len(x_blocks) if y is None else client.compute(self._y_parts)
        self._actor_futures = [
            client.submit(RowPartition, xb, yb, int(a), actor=True, pure=False)
            for xb, yb, a in zip(x_blocks, y_blocks, self.offsets[:-1])
        ]
        self.actors = [f.result() for f in self._actor_futures]
        del x_blocks, y_blocks  # the actors hold the chunks now
        self._journal = [[] for _ in self.actors]
        self.bytes_sent = self.bytes_received = self.journal_bytes = self.journal_peak = 0
        self.calls = self.recoveries = 0
        self.recovery_seconds = 0.0

    def _call(self, fn, args_per_partition):
        payloads = {i: pickle.dumps((fn, args), protocol=5) for i, args in args_per_partition.items()}
        self.bytes_sent += sum(len(b) for b in payloads.values())
        futures = {}
        for i, args in args_per_partition.items():
            try:
                futures[i] = self.actors[i].run(fn, *args)
            except _LOST_ERRORS as exc:  # the worker was lost before this call
                futures[i] = exc
        self._dispatched(fn)
        results = []
        for i, future in futures.items():
            try:
                if isinstance(future, BaseException):
                    raise future
                result = future.result()
            except _LOST_ERRORS:
                if not self._is_lost(i):
                    raise
                result = self._recover(i, payloads[i])
            results.append(result)
        self._journal_calls(fn, args_per_partition, payloads)
        self.bytes_received += sum(len(pickle.dumps(r, protocol=5)) for r in results)
        self.calls += 1
        return results

    def _journal_calls(self, fn, args_per_partition, payloads):
        """Keep the calls' payloads, after forgetting the ones a scope reset overwrites."""
        if fn is _run_and_fetch:  # RowStore.sum_and_fetch: the function it runs
            fn = next(iter(args_per_partition.values()))[0]
        scope, resets = getattr(fn, "state_scope", (None, False))
        if resets is None:  # rows._store.read_only: replaying it would change nothing
            return
        for i, payload in payloads.items():
            if resets:
                kept = [entry for entry in self._journal[i] if entry[0] != scope]
                self.journal_bytes -= sum(len(e[1]) for e in self._journal[i]) - sum(
                    len(e[1]) for e in kept
                )
                self._journal[i] = kept
            self._journal[i].append((scope, payload))
            self.journal_bytes += len(payload)
        self.journal_peak = max(self.journal_peak, self.journal_bytes)

    def _dispatched(self, fn):
        """Called once a call's messages are sent, before its results are awaited."""

    def _is_lost(self, i):
        """Whether partition ``i``'s actor is gone with its worker (waits for the scheduler)."""
        deadline = time.monotonic() + self.lost_timeout
        while True:
            if self._actor_futures[i].status != "finished":
                return True
            workers = self.client.scheduler_info().get("workers", {})
            if self.actors[i]._address not in workers:
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)

    def _recover(self, i, payload, attempts=3):
        """:meth:`_rebuild` partition ``i``, again if a worker is lost while it runs."""
        for attempt in range(attempts):
            try:
                return self._rebuild(i, payload)
            except _LOST_ERRORS:
                if attempt == attempts - 1 or not self._is_lost(i):
                    raise

    def _rebuild(self, i, payload):
        """A new actor for partition ``i`` from its recomputed chunk, its journal replayed.

        Returns the result of the call ``payload`` on the rebuilt partition.
        """
        start = time.perf_counter()
        xb = self.client.compute(self._x_parts[i])
        yb = None if self._y_parts[i] is None else self.client.compute(self._y_parts[i])
        future = self.client.submit(
            RowPartition, xb, yb, int(self.offsets[i]), actor=True, pure=False
        )
        self._actor_futures[i], self.actors[i] = future, future.result()
        del xb, yb
        journal = [entry[1] for entry in self._journal[i]]
        result = self.actors[i].run(_replay, journal + [payload]).result()
        self.recoveries += 1
        self.recovery_seconds += time.perf_counter() - start
        return result

    def close(self):
        """Release the actors (and with them the partitions' data and state)."""
        self.actors = []
        self._journal = []
        if self._actor_futures:
            self.client.cancel(self._actor_futures)
        self._actor_futures = []


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


_ROW_COUNTS = {1: "one row", 2: "two rows"}


class DaskBackend(RowBackend):
    """dask arrays chunked by rows, fitted on a dask.distributed cluster (:class:`DaskRows`)."""

    name = "a dask array"

    def owns(self, a):
        return is_dask_array(a)

    def validate(self, X, y, *, min_rows, dtypes, labels):
        import dask
        import dask.array as da

        if not is_dask_array(X):
            raise TypeError(
                "`X` must be a dask array when `y` is one (pass both as dask arrays), got "
                f"{type(X).__name__}."
            )
        if X.ndim != 2 or X.shape[0] < min_rows or X.shape[1] < 1:
            raise ValueError(
                f"`X` must be a 2-D dask array with at least "
                f"{_ROW_COUNTS.get(min_rows, f'{min_rows} rows')} and one column, got shape "
                f"{X.shape}."
            )
        if X.dtype not in dtypes:
            X = X.astype(dtypes[0])
        if not is_dask_array(y):
            y = np.asarray(y) if labels else np.asarray(y, dtype=np.float64)
            y = da.from_array(y, chunks=X.chunks[0][0])
        if labels:
            if y.ndim != 1:
                raise ValueError(
                    f"`y` must be a 1-D array of class labels, got shape {y.shape}."
                )
            X, y = row_chunked(X, y)
            finite_X, classes = dask.compute(da.isfinite(X).all(), da.unique(y))
            finite_y, classes = True, np.sort(np.asarray(classes))
        else:
            X, y = row_chunked(X, y.astype(np.float64))
            finite_X, finite_y = dask.compute(da.isfinite(X).all(), da.isfinite(y).all())
            classes = None
        for name, ok in (("X", finite_X), ("y", finite_y)):
            if not ok:
                raise ValueError(f"`{name}` must contain only finite values (no NaN or inf).")
        return X, y, classes

    def gather(self, a):
        return a.compute()

    def moments(self, y):
        import dask

        return dask.compute(y.mean(axis=0), y.std(axis=0))

    def open(self, X, y):
        return DaskRows(X, y)

    def map_rows(self, fn, X):
        return lazy_predict(fn, X)
