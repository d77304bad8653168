"""
===============================================
Fit time versus n: sparse GP against a full GP
===============================================

A full GP (:class:`sklearn.gaussian_process.GaussianProcessRegressor`) factorises the
:math:`n \\times n` kernel matrix: :math:`O(n^3)` time and :math:`O(n^2)` memory.
:class:`~skgpsparse.SparseGPRegressor` with a basis of ``max_basis`` points costs
:math:`O(n\\, d_{max}^2)` time and :math:`O(n\\, d_{max})` memory, linear in :math:`n`.

Both are fitted with a fixed kernel (``optimizer=None``), so the timings measure one fit and
not a hyperparameter search: the full GP up to :math:`n = 1500` and the sparse GP
(``max_basis=50``, the default matching-pursuit selection) up to :math:`n = 20\\,000`, on
generated data (:func:`sklearn.datasets.make_friedman1`). To keep the page quick to build, the
ranges are small and each time is the median of three runs (one run for :math:`n \\ge 5000`);
BLAS is limited to one thread for both models, so that the comparison does not depend on the
number of cores. The timings come from the machine that built this page; the dotted and
dash-dotted lines have slopes 1 and 3 for reference, drawn through the largest :math:`n` of
each model. Over such small ranges the measured slopes are below the asymptotic ones, because
fixed overheads and the kernel evaluations (:math:`O(n^2)` for the full GP, :math:`O(n)` for
the sparse one) still weigh in. The repository's ``benchmarks/`` measure the same on larger
data and with hyperparameter learning.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_friedman1
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from threadpoolctl import threadpool_limits

from skgpsparse import SparseGPRegressor

X_all, y_all = make_friedman1(n_samples=20000, n_features=5, noise=0.5, random_state=0)
kernel = ConstantKernel(10.0) * RBF(1.0)


def median_fit_time(make_model, n):
    times = []
    for _ in range(3 if n < 5000 else 1):
        model = make_model()
        with threadpool_limits(limits=1, user_api="blas"):
            start = time.perf_counter()
            model.fit(X_all[:n], y_all[:n])
            times.append(time.perf_counter() - start)
    return float(np.median(times))


n_full = [250, 500, 1000, 1500]
n_sparse = [250, 500, 1000, 2000, 5000, 10000, 20000]
t_full = [
    median_fit_time(
        lambda: GaussianProcessRegressor(kernel, alpha=0.25, optimizer=None), n
    )
    for n in n_full
]
t_sparse = [
    median_fit_time(
        lambda: SparseGPRegressor(
            kernel, noise_variance=0.25, max_basis=50, optimizer=None, random_state=0
        ),
        n,
    )
    for n in n_sparse
]
for n, t in zip(n_full, t_full):
    print(f"full GP    n = {n:6d}: {t:7.3f} s")
for n, t in zip(n_sparse, t_sparse):
    print(f"sparse GP  n = {n:6d}: {t:7.3f} s")
# The full GP's Cholesky factorisation alone grows as n^3: extrapolate from the largest n.
t_full_20k = t_full[-1] * (n_sparse[-1] / n_full[-1]) ** 3
print(f"full GP at n = {n_sparse[-1]}, extrapolated with slope 3: about {t_full_20k:.0f} s")

# %%
# Log-log plot
# ------------

fig, ax = plt.subplots(figsize=(7, 5))
ax.loglog(n_full, t_full, "o-", label="GaussianProcessRegressor (full GP)")
ax.loglog(n_sparse, t_sparse, "s-", label="SparseGPRegressor, max_basis=50")
n_ref = np.array([250, 20000], dtype=float)
ax.loglog(n_ref, t_sparse[-1] * n_ref / n_sparse[-1], "k:", lw=1, label="slope 1")
ax.loglog(n_ref, t_full[-1] * (n_ref / n_full[-1]) ** 3, "k-.", lw=1, label="slope 3")
ax.set_ylim(min(t_full + t_sparse) / 2, max(t_full + t_sparse) * 3)
ax.set_xlabel("number of training points n")
ax.set_ylabel("fit time [s]")
ax.set_title("Fit time with a fixed kernel")
ax.legend(fontsize=8)
ax.grid(True, which="both", alpha=0.3)
fig.tight_layout()
plt.show()
