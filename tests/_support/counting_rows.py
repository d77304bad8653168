"""A row store that counts its calls: the round trips a fit on a cluster would make."""

from skgpsparse.rows._store import LocalRows


class CountingRows(LocalRows):
    """:class:`LocalRows` counting its calls by partition function in ``calls``.

    A call of :meth:`~skgpsparse.rows._store.RowStore.sum_and_fetch` counts as
    ``"<function>+fetch"``.
    """

    def __init__(self, *args):
        super().__init__(*args)
        self.calls = {}

    def _call(self, fn, args_per_partition):
        key = fn.__name__
        if key == "_run_and_fetch":  # sum_and_fetch: (fn, local indices, args) per partition
            key = next(iter(args_per_partition.values()))[0].__name__ + "+fetch"
        self.calls[key] = self.calls.get(key, 0) + 1
        return super()._call(fn, args_per_partition)
