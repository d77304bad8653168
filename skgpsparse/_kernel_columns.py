"""Kernel column blocks for the regressor's passes over the data, and their chunk threads.

Kernel columns of an exact ``RBF`` or ``ConstantKernel * RBF`` (either order) are computed
from inner products of the scaled, centred inputs (one BLAS product and one ``exp`` per
block); other kernels are called as they are. :func:`_run_chunks` spreads a pass's row chunks
over threads with results that do not depend on the schedule.
"""

import itertools
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, Product
from threadpoolctl import threadpool_info

# The inner-product form of the RBF loses ~eps |x|^2 absolutely; it is used only when the
# centred, scaled inputs satisfy |x|^2 / 2 <= this (an error below ~1e-12 in the kernel).
_MAX_HALF_SQNORM = 1e4

_EXECUTOR = None


def _blas_threads():
    """Threads BLAS would use here (1 inside a joblib worker or ``threadpool_limits(1)``)."""
    counts = [i["num_threads"] for i in threadpool_info() if i.get("user_api") == "blas"]
    return max(1, max(counts)) if counts else 1


def _run_chunks(n_chunks, work, n_threads):
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


def _rbf_parameters(kernel, n_features):
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


class _KernelColumns:
    """Blocks ``K(X[rows], X[J])`` of one training set's kernel.

    For ``c * RBF`` (GPML eq. (2.31)) with scaled, centred inputs ``s = (x - m) / l``:
    ``k(x, z) = c exp(-|s_x - s_z|^2 / 2) = exp(s_x.s_z - |s_x|^2/2 - |s_z|^2/2 + log c)``,
    one BLAS product and one in-place ``exp`` per block; the exponent is clipped at ``log c``
    (``|s_x - s_z|^2 >= 0``). Other kernels are called as they are.
    """

    def __init__(self, kernel, X):
        self.kernel, self.X, self.fast = kernel, X, False
        params = _rbf_parameters(kernel, X.shape[1]) if X.shape[0] else None
        if params is not None:
            c, ls = params
            d = X.shape[1]
            # Rows [s_x, -|s_x|^2/2, 1] and [s_z, 1, log c - |s_z|^2/2]: their inner product is
            # the exponent, so one BLAS product forms it (no passes over the block to shift it).
            A = np.empty((X.shape[0], d + 2))
            np.divide(X - X.mean(axis=0), ls, out=A[:, :d])
            A[:, d] = -0.5 * np.einsum("ij,ij->i", A[:, :d], A[:, :d])
            A[:, d + 1] = 1.0
            if np.all(np.isfinite(A)) and -A[:, d].min() <= _MAX_HALF_SQNORM:
                self.A, self.log_c, self.fast = A, np.log(c), True

    def __call__(self, rows, J, out=None):
        if not self.fast:
            K = np.asarray(self.kernel(self.X[rows], self.X[J]), dtype=float)
            if out is None:
                return K
            out[...] = K
            return out
        Z = self.A[J][:, [*range(self.A.shape[1] - 2), -1, -2]]
        Z[:, -1] += self.log_c
        K = np.dot(self.A[rows], Z.T, out=out)
        np.minimum(K, self.log_c, out=K)
        return np.exp(K, out=K)
