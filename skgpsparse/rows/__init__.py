"""The row layer: where the training rows live, and passes over them in blocks or partitions.

The estimator families touch their training rows through this package only when the rows are
not one in-memory array, and to predict by row blocks:

- :mod:`._store`: the row-store interface (:class:`RowStore`: ``map``, ``sum``, ``take``) and
  :class:`LocalRows`, partitions kept in this process;
- :mod:`._dask`: :class:`DaskRows`, each partition in a dask.distributed actor on the worker
  that computed its chunk, and lazy row-chunked prediction on a dask array (dask is imported
  only when a dask array is passed);
- :mod:`._blocks`: prediction by blocks of rows, so that a predict call's memory does not
  grow with the rows.

A new backend (a memory-mapped file, a Ray cluster) is one more module here: a subclass of
:class:`RowStore` whose partitions live where its rows do. The families' loops do not change.
"""

from ._blocks import block_rows, map_row_blocks
from ._dask import DaskRows, is_dask_array, lazy_predict, row_chunked
from ._store import LocalRows, RowPartition, RowStore, row_centre

__all__ = [
    "DaskRows", "LocalRows", "RowPartition", "RowStore", "block_rows", "is_dask_array",
    "lazy_predict", "map_row_blocks", "row_centre", "row_chunked",
]
