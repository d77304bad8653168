"""Kernel column blocks for the regressor's passes over the data, and their chunk threads.

Kernel columns of an exact ``RBF`` or ``ConstantKernel * RBF`` (either order) are computed from
inner products of the scaled, centred inputs (one BLAS product and one ``exp`` per block); other
kernels are called as they are. For a ``float32`` input the columns that only score candidates can
be computed in ``float32`` (:meth:`KernelColumns.operand` and :meth:`KernelColumns.block`).
:class:`CrossKernel` holds the same product form against a fixed basis, set up once, for the
prediction blocks ``K(X*, X_u)`` of a fitted model (and :func:`iter_cross_kernel` sets it up per
call), for ``c * Matern`` (``nu`` 1.5, 2.5) too. :class:`ColumnBlocks` stores the basis' columns by
blocks of rows, and :func:`run_chunks` spreads a pass's row chunks over threads with results that
do not depend on the schedule.
"""

import itertools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Product
from threadpoolctl import threadpool_info

from ._gradients import chunk_rows, iter_kernel, row_blocks
from ._radial import radial_parameters

# The inner-product form of the RBF loses ~eps |x|^2 absolutely; it is used only when the
# centred, scaled inputs satisfy |x|^2 / 2 <= this (an error below ~1e-12 in the kernel).
MAX_HALF_SQNORM = 1e4
# The same bound for float32 scoring columns: eps32 = 6e-8, so the exponent's rounding error
# (a few eps32 (|s_x|^2 + |s_z|^2) / 2) stays below ~5e-4, and ~1e-7 (|s_x|^2 + |s_z|^2) for
# typical standardised inputs; beyond it the scoring columns are computed in float64.
_MAX_HALF_SQNORM_32 = 1e3

_EXECUTOR = None


def blas_threads():
    """Threads BLAS would use here (1 inside a joblib worker or ``threadpool_limits(1)``)."""
    counts = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
    return max(1, max(counts)) if counts else 1


def run_chunks(n_chunks, work, n_threads):
    """Call ``work(i)`` for every chunk ``i`` on up to ``n_threads`` threads.

    Chunks are handed out one by one (a busy core does not hold the pass back); ``work``
    writes its results per chunk, so they do not depend on the threads' schedule. NumPy and
    BLAS release the GIL in the chunk's array work.
    """
    global _EXECUTOR
    n_threads = min(n_threads, n_chunks)
    if n_threads <= 1:
        for i in range(n_chunks):
            work(i)
        return
    if _EXECUTOR is None:
        _EXECUTOR = ThreadPoolExecutor(max_workers=os.cpu_count() or 1)
    counter = itertools.count()

    def worker():
        for i in counter:
            if i >= n_chunks:
                return
            work(i)

    futures = [_EXECUTOR.submit(worker) for _ in range(n_threads - 1)]
    worker()
    for future in futures:
        future.result()


def kernel_diag(kernel, X, chunk=1 << 16):
    """``k(x_i, x_i)`` in float64, on float64 copies of chunks of a lower-precision ``X``."""
    if X.dtype == np.float64:
        return np.asarray(kernel.diag(X), dtype=np.float64)
    out = np.empty(X.shape[0])
    for a in range(0, X.shape[0], chunk):
        out[a : a + chunk] = kernel.diag(X[a : a + chunk].astype(np.float64))
    return out


def rbf_parameters(kernel, n_features):
    """``(c, length_scale)`` of an exact ``RBF`` or ``c * RBF`` kernel, else None."""
    c, rbf = 1.0, kernel
    if type(kernel) is Product:
        k1, k2 = kernel.k1, kernel.k2
        if type(k1) is RBF and type(k2) is ConstantKernel:
            k1, k2 = k2, k1
        if not (type(k1) is ConstantKernel and type(k2) is RBF):
            return None
        c, rbf = float(k1.constant_value), k2
    elif type(kernel) is not RBF:
        return None
    ls = np.asarray(rbf.length_scale, dtype=float)
    # A length-scale vector must match the features (else the kernel's own call raises).
    if not (c > 0 and np.all(ls > 0) and (ls.ndim == 0 or ls.shape == (n_features,))):
        return None
    return c, ls


def _augmented_rows(X, centre, length_scale):
    """Rows ``[s_x, -|s_x|^2/2, 1]`` of ``s_x = (x - centre) / length_scale``, in float64.

    With the rows ``[s_z, 1, log c - |s_z|^2/2]`` of the other inputs (the same array with its
    last two columns swapped and ``log c`` added), one BLAS product gives the exponent
    ``log c - |s_x - s_z|^2 / 2`` of ``c * RBF`` (no passes over the block to shift it). The
    arithmetic is float64 even for a float32 ``X`` (the difference, the scaling).
    """
    d = X.shape[1]
    A = np.empty((X.shape[0], d + 2))
    np.subtract(X, centre, out=A[:, :d])
    np.divide(A[:, :d], length_scale, out=A[:, :d])
    A[:, d] = -0.5 * np.einsum("ij,ij->i", A[:, :d], A[:, :d])
    A[:, d + 1] = 1.0
    return A


class KernelColumns:
    """Blocks ``K(X[rows], X[J])`` of one training set's kernel.

    For ``c * RBF`` (GPML eq. (2.31)) with scaled, centred inputs ``s = (x - m) / l``:
    ``k(x, z) = c exp(-|s_x - s_z|^2 / 2) = exp(s_x.s_z - |s_x|^2/2 - |s_z|^2/2 + log c)``,
    one BLAS product and one in-place ``exp`` per block; the exponent is clipped at ``log c``
    (``|s_x - s_z|^2 >= 0``). Other kernels are called as they are (on ``float64`` copies of
    the rows). The scaled inputs are formed in ``float64`` whatever the input's dtype, so the
    columns of a ``float32`` input equal those of its ``float64`` cast.

    ``score_dtype=np.float32`` (for a ``float32`` input) also keeps a ``float32`` copy of the
    scaled inputs: :meth:`operand` / :meth:`block` with ``dtype=np.float32`` then compute the
    product and the ``exp`` in single precision (the ``float32`` ``exp`` is vectorised on AVX2
    CPUs, the ``float64`` one is not), for columns that only score candidates. Their relative
    error is a few ``eps32 (|s_x|^2 + |s_z|^2) / 2``, about ``1e-7 (|s_x|^2 + |s_z|^2)``.
    """

    def __init__(self, kernel, X, score_dtype=np.float64, centre=None):
        self.kernel, self.X, self.fast = kernel, X, False
        self.fast32 = False
        params = rbf_parameters(kernel, X.shape[1]) if X.shape[0] else None
        if params is not None:
            c, ls = params
            d = X.shape[1]
            # A row partition of a larger training set passes the whole set's centre, so
            # that every partition's columns are those of the whole set.
            if centre is None:
                centre = X.mean(axis=0, dtype=np.float64)
            A = _augmented_rows(X, centre, ls)
            if np.all(np.isfinite(A)) and -A[:, d].min() <= MAX_HALF_SQNORM:
                self.A, self.log_c, self.fast = A, np.log(c), True
                self.centre, self.length_scale = centre, ls
                if score_dtype == np.float32 and -A[:, d].min() <= _MAX_HALF_SQNORM_32:
                    self.A32, self.fast32 = A.astype(np.float32), True

    def operand(self, J, dtype=np.float64):
        """What :meth:`block` needs for the columns ``J``: rows ``[s_z, 1, log c - |s_z|^2/2]``.

        ``dtype=np.float32`` gives single-precision scoring columns when :attr:`fast32` (the
        ``float64`` operand otherwise); ``J`` itself for kernels without the fast form.
        """
        J = np.asarray(J)
        if not self.fast:
            return J
        Z = self.A[J][:, [*range(self.A.shape[1] - 2), -1, -2]]
        Z[:, -1] += self.log_c
        return Z.astype(np.float32) if dtype == np.float32 and self.fast32 else Z

    def operand_of_rows(self, Xz, dtype=np.float64):
        """:meth:`operand` for inputs ``Xz`` given as rows (not indices into ``X``).

        The rows are centred and scaled as ``X``'s, so the columns equal those of the same
        rows inside ``X``; for kernels without the fast form, the float64 rows themselves.
        """
        Xz = np.asarray(Xz)
        if not self.fast:
            return np.asarray(Xz, dtype=np.float64)
        Z = _augmented_rows(Xz, self.centre, self.length_scale)
        Z = Z[:, [*range(Z.shape[1] - 2), -1, -2]]
        Z[:, -1] += self.log_c
        return Z.astype(np.float32) if dtype == np.float32 and self.fast32 else Z

    def block(self, rows, Z, out=None):
        """``K(X[rows], X[J])`` for ``Z = operand(J, dtype)`` (or :meth:`operand_of_rows`)."""
        if not self.fast:
            Zx = self._rows64(Z) if Z.dtype.kind in "iu" else Z  # indices, or rows
            K = np.asarray(self.kernel(self._rows64(rows), Zx), dtype=float)
            if out is None:
                return K
            out[...] = K
            return out
        if Z.dtype == np.float32:
            # Scoring only: no clip at log c (the rounding can exceed it by ~1e-4 relatively,
            # which the scores do not notice), and the float32 exp is SIMD on AVX2.
            K = np.dot(self.A32[rows], Z.T, out=out)
            return np.exp(K, out=K)
        K = np.dot(self.A[rows], Z.T, out=out)
        np.minimum(K, self.log_c, out=K)
        return np.exp(K, out=K)

    def _rows64(self, rows):
        X = self.X[rows]
        return X if X.dtype == np.float64 else X.astype(np.float64)

    def __call__(self, rows, J, out=None):
        return self.block(rows, self.operand(J), out=out)


class CrossKernel:
    """``kernel(X, Z)`` against fixed inputs ``Z`` (a basis), its set-up done once.

    For an exact ``RBF`` or ``ConstantKernel * RBF`` (either order) whose scaled basis passes
    the checks below, the blocks come from inner products of inputs centred on ``Z``'s mean
    and scaled by the length scales, as in :class:`KernelColumns`: rows
    ``[s_x, -|s_x|^2/2, 1]`` times ``[s_z, 1, log c - |s_z|^2/2]`` give the exponent
    ``log c - |s_x - s_z|^2 / 2`` in one BLAS product, then one ``exp`` (GPML eq. (2.31)).
    ``c * Matern`` with ``nu`` in 1.5, 2.5, inf takes the same product without ``log c``,
    ``-|s_x - s_z|^2 / 2``, and its closed form in ``r`` (GPML eqs. (4.16)-(4.17),
    :mod:`skgpsparse.kernels._radial`): one ``sqrt`` and one ``exp`` per entry, where the
    kernel's own call forms the differences by ``cdist``. The
    basis' operand, the centre and ``log c`` are formed here, so a fitted model that keeps
    this object pays for them once, not on every prediction call (for one row, forming them
    cost more than the block itself). A block with a row so far from ``Z`` that the inner
    products would lose digits (``|s_x|^2 / 2 > 1e4``), and every other kernel, go through
    the kernel's own call.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    Z : ndarray of shape (n_Z, n_features)
        The basis vectors (float64). Neither is copied: changing them afterwards leaves this
        object stale.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.kernels._columns import CrossKernel
    >>> X, Z = np.random.RandomState(0).rand(5, 2), np.random.RandomState(1).rand(3, 2)
    >>> cross = CrossKernel(RBF(0.5), Z)
    >>> bool(cross.product_form), bool(np.allclose(cross.block(X), RBF(0.5)(X, Z)))
    (True, True)
    """

    def __init__(self, kernel, Z):
        self.kernel, self.Z, self.product_form = kernel, Z, False
        params = radial_parameters(kernel, Z.shape[1]) if Z.shape[0] else None
        if params is None:
            return
        c, ls, radial = params
        d = Z.shape[1]
        centre = Z.mean(axis=0)
        Zop = _augmented_rows(Z, centre, ls)
        if not (np.all(np.isfinite(Zop)) and -Zop[:, d].min() <= MAX_HALF_SQNORM):
            return
        self._Z_rows = Zop  # Z's own augmented rows: the square block K(Z, Z) reuses them
        # the RBF's exponent takes log c; a Matern's E = -r^2 / 2 takes c afterwards
        rbf = rbf_parameters(kernel, d) is not None
        log_c = np.log(c) if rbf else 0.0
        Zop = Zop[:, [*range(d), d + 1, d]]
        Zop[:, d + 1] += log_c
        self.product_form = True
        self.c, self.log_c, self.centre, self.length_scale = c, log_c, centre, ls
        self.radial = None if rbf else radial
        self.operand_T = Zop.T  # the right factor of every block's product

    def block(self, X):
        """``kernel(X, Z)`` for one block of rows ``X`` (float64)."""
        return self.block_and_slopes(X, slopes=False)

    def block_and_slopes(self, X, slopes=True):
        """``kernel(X, Z)`` and, with ``slopes``, ``G`` with ``dK / d log l_k = G D_k``.

        ``G`` (:mod:`skgpsparse.kernels._radial`) is None when the block went through the
        kernel's own call (no product form, or a row too far from ``Z``); only the block
        is returned without ``slopes``.
        """
        K, G = None, None
        if self.product_form:
            d = X.shape[1]
            square = X is self.Z  # (its rows were checked by the set-up)
            A = self._Z_rows if square else _augmented_rows(X, self.centre, self.length_scale)
            if square or (np.all(np.isfinite(A)) and -A[:, d].min() <= MAX_HALF_SQNORM):
                K = A @ self.operand_T
                np.minimum(K, self.log_c, out=K)  # |s_x - s_z|^2 >= 0
                if self.radial is not None:
                    K, G = self.radial.values(K, slopes=True) if slopes else (
                        self.radial.values(K), None)
                else:
                    K = G = np.exp(K, out=K)
        if K is None:
            K = np.asarray(self.kernel(X, self.Z), dtype=float)
        return (K, G) if slopes else K

    def diag(self, X):
        """``k(x, x)`` of the rows of ``X``: ``c`` for the product form, as the kernel gives."""
        if self.product_form:
            return np.full(X.shape[0], float(self.c))
        return self.kernel.diag(X)

    def blocks(self, X, chunk_size=None):
        """``(rows, kernel(X[rows], Z))`` over blocks of rows of ``X`` (float64, 2-D).

        Blocks of ``chunk_size`` rows, by default about 32 MB of kernel values, as
        :func:`iter_kernel`. An ``X`` of one block (a single row, say) gives a one-element
        tuple, without the generator.
        """
        # without a chunk_size: ~32 MB of kernel values, the budget read at each call
        n_rows = chunk_rows(chunk_size, self.Z.shape[0], 1)
        if 0 < X.shape[0] <= n_rows:
            return ((slice(0, X.shape[0]), self.block(X)),)
        return ((rows, self.block(X[rows])) for rows in row_blocks(X, n_rows))


def iter_cross_kernel(kernel, X, Z, *, chunk_size=None):
    """Yield ``kernel(X[rows], Z)`` over blocks of rows of ``X``, as :func:`iter_kernel`.

    For an exact ``RBF``, ``Matern`` (``nu`` 1.5, 2.5, inf) or ``ConstantKernel *`` one the
    blocks come from inner products of centred, scaled inputs (:class:`CrossKernel`, set up
    anew on every call): about half the time of the kernel's own ``cdist`` and ``exp`` for
    prediction blocks against a basis.

    Parameters
    ----------
    kernel : sklearn.gaussian_process.kernels.Kernel
    X : ndarray of shape (n_X, n_features)
        Rows to predict at (float64).
    Z : ndarray of shape (n_Z, n_features)
        The basis vectors.
    chunk_size : int, default=None
        Rows per block, as :func:`~skgpsparse.kernels.iter_kernel`.

    Yields
    ------
    rows : slice
    K : ndarray of shape (n_rows, n_Z)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.gaussian_process.kernels import RBF
    >>> from skgpsparse.kernels._columns import iter_cross_kernel
    >>> X, Z = np.random.RandomState(0).rand(5, 2), np.random.RandomState(1).rand(3, 2)
    >>> all(np.allclose(K, RBF(0.5)(X[rows], Z)) for rows, K in iter_cross_kernel(RBF(0.5), X, Z))
    True
    """
    cross = CrossKernel(kernel, Z)
    if not cross.product_form:
        yield from iter_kernel(kernel, X, Z, chunk_size=chunk_size)  # its input checks too
        return
    yield from cross.blocks(X, chunk_size=chunk_size)


class ColumnBlocks:
    """``p_max`` kernel columns of length ``n`` (``K_p^T``), stored by blocks of rows.

    An ``n_blocks x p_max x W`` array (``W = 2048`` rows per block, zero-padded beyond ``n``):
    the active ``p x W`` part of a block is one contiguous stretch of memory, which BLAS
    streams at full bandwidth in ``alpha @ K_p^T``-type products (on row-strided slices of a
    ``p_max x n`` array OpenBLAS reached half of it: 9-12 against 19-21 GB/s on one core of the
    test machine, n = 1e6, p = 250). Passes work on row ranges inside one block
    (:meth:`chunks`, :meth:`chunk`).
    """

    def __init__(self, n, p_max, block_rows=2048):
        self.n = n
        self.W = W = max(1, min(block_rows, n))
        self.B = np.zeros((-(-n // W), p_max, W))

    def chunks(self, size):
        """Row ranges ``(a, b)`` of at most ``size`` rows, none crossing a block."""
        W, n = self.W, self.n
        return [
            (a, min(a + size, start + W, n))
            for start in range(0, n, W)
            for a in range(start, min(start + W, n), size)
        ]

    def chunk(self, a, b, p):
        """The ``p x (b - a)`` view of the first ``p`` columns on rows ``a .. b-1``."""
        blk = a // self.W
        return self.B[blk, :p, a - blk * self.W : b - blk * self.W]

    def delete_column(self, pos, p):
        """Drop column ``pos`` of the first ``p``; the later ones move up by one."""
        for blk in self.B:  # block by block: a temporary copy of one block at most
            blk[pos : p - 1] = blk[pos + 1 : p]

    def times(self, x):
        """``K_p x`` for the first ``p = len(x)`` columns: one batched product.

        ``x`` of shape ``(p,)`` gives a length-``n`` vector, ``(p, m)`` an ``n x m`` array.
        """
        if x.ndim == 1:
            return (x @ self.B[:, : len(x), :]).reshape(-1)[: self.n]
        out = x.T @ self.B[:, : len(x), :]  # n_blocks x m x W
        return out.transpose(0, 2, 1).reshape(-1, x.shape[1])[: self.n]

    def transpose_times(self, M, p):
        """``K_p^T M`` for an ``n x k`` array ``M`` and the first ``p`` columns."""
        out = np.zeros((p, M.shape[1]))
        for blk in range(self.B.shape[0]):
            a, e = blk * self.W, min((blk + 1) * self.W, self.n)
            out += self.B[blk, :p, : e - a] @ M[a:e]
        return out

    def dense(self, p):
        """The first ``p`` columns as a new ``p x n`` array."""
        return self.B[:, :p, :].transpose(1, 0, 2).reshape(p, -1)[:, : self.n].copy()
