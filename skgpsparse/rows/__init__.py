"""The row layer: where the training rows live, and passes over them in blocks or partitions.

The estimator families touch their training rows through this package when the rows are not
one in-memory array, and to predict by row blocks:

- :mod:`._backend`: the one place where the storage is chosen. ``fit``, ``predict`` and
  ``partial_fit`` call :func:`backend_for` on their arrays: ``None`` for in-memory arrays,
  else the registered :class:`RowBackend` that owns them, which validates them, reduces them
  (finiteness, classes, target moments), opens a row store on them and predicts on them by
  row partition (:func:`predicts_by_partition`). No estimator names an array type;
- :mod:`._store`: the row-store interface (:class:`RowStore`: ``map``, ``sum``, ``take``) and
  :class:`LocalRows`, partitions kept in this process;
- :mod:`._dask`: :class:`DaskBackend` and :class:`DaskRows`, each partition in a
  dask.distributed actor on the worker that computed its chunk, and lazy row-chunked
  prediction on a dask array (dask is imported only when a dask array is passed);
- :mod:`._blocks`: prediction by blocks of rows, so that a predict call's memory does not
  grow with the rows.

A new backend (a memory-mapped file, a Ray cluster) is one more module here, a
:class:`RowBackend` subclass with a :class:`RowStore` whose partitions live where its rows
do, and one :func:`register_backend` call below. The estimators and the families' loops do
not change (``tests/test_row_backend.py`` registers one of its own).
"""

from ._backend import (
                       RowBackend,
                       backend_for,
                       in_memory_only,
                       predicts_by_partition,
                       register_backend,
                       unregister_backend,
)
from ._blocks import block_rows, map_row_blocks
from ._dask import DaskBackend, DaskRows, is_dask_array, lazy_predict, row_chunked
from ._store import LocalRows, RowPartition, RowStore, row_centre

register_backend(DaskBackend())

__all__ = [
    "DaskBackend", "DaskRows", "LocalRows", "RowBackend", "RowPartition", "RowStore",
    "backend_for", "block_rows", "in_memory_only", "is_dask_array", "lazy_predict",
    "map_row_blocks", "predicts_by_partition", "register_backend", "row_centre", "row_chunked",
    "unregister_backend",
]
