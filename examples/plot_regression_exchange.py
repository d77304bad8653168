"""
======================================================
Projected-process error bars before and after exchange
======================================================

:class:`~skgpsparse.SparseGPRegressor` on a one-dimensional problem, with the same number of
basis vectors (``max_basis=10``) fitted twice: by greedy forward selection alone
(``n_exchange=0``), and followed by 30 backward-deletion exchange steps (``n_exchange=30``,
Sun & Yao 2006). Each exchange step deletes the basis vector whose removal increases the sparse
MAP cost (exchange paper, eq. 2) the least, which by eq. (4) is
:math:`\\tfrac12 \\alpha_j^2 / \\Sigma_{jj}` (criterion eq. 5), and then adds a replacement
with the forward criterion, so the basis size stays the same.

The kernel and the noise variance are fixed (``optimizer=None``), so the two fits differ only
in their basis; the data are noisy samples of a smooth function on :math:`[0, 10]`, with a gap
around :math:`x = 5`. The shaded bands are the mean plus and minus two projected-process
standard deviations of the latent function (GPML eq. 8.27, ``predict(X, return_std=True)``):
they widen between basis points, grow towards the prior standard deviation (here 1) in the
gap, and return to it outside the training range, instead of collapsing to zero as the
subset-of-regressors approximation's would. The last panel shows the cost (2) after every forward step and every deletion or
addition of the exchange phase (``cost_curve_``).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.gaussian_process.kernels import RBF, ConstantKernel

from skgpsparse import SparseGPRegressor


def true_function(x):
    return np.sin(1.5 * x) + 0.3 * np.cos(4.0 * x)


rng = np.random.RandomState(0)
x = np.sort(rng.uniform(0.0, 10.0, 300))
x = x[(x < 4.3) | (x > 5.7)]  # a gap without data
X = x[:, None]
y = true_function(x) + 0.15 * rng.randn(len(x))
x_plot = np.linspace(-1.5, 12.5, 500)

kernel = ConstantKernel(1.0) * RBF(0.6)
common = dict(noise_variance=0.15**2, max_basis=10, optimizer=None, random_state=0)
models = {
    "forward selection only (n_exchange=0)": SparseGPRegressor(kernel, n_exchange=0, **common),
    "with 30 exchange steps (n_exchange=30)": SparseGPRegressor(kernel, n_exchange=30, **common),
}

fig, axes = plt.subplots(
    3, 1, figsize=(9, 10), gridspec_kw=dict(height_ratios=[3, 3, 2])
)
for ax, (title, model) in zip(axes, models.items()):
    model.fit(X, y)
    mean, std = model.predict(x_plot[:, None], return_std=True)
    rmse = np.sqrt(np.mean((model.predict(X) - true_function(x)) ** 2))
    cost = model.cost_curve_[-1]
    print(f"{title}: cost (2) = {cost:.3f}, RMSE to the true function = {rmse:.3f}")
    ax.scatter(x, y, s=6, c="0.6", label="training data")
    ax.plot(x_plot, true_function(x_plot), "k--", lw=1, label="true function")
    ax.plot(x_plot, mean, "tab:blue", lw=2, label="predictive mean")
    ax.fill_between(
        x_plot, mean - 2 * std, mean + 2 * std, color="tab:blue", alpha=0.2,
        label="mean +/- 2 std (GPML eq. 8.27)",
    )
    xb = model.basis_vectors_[:, 0]
    ax.plot(xb, np.full_like(xb, -2.3), "r^", ms=9, label="basis vectors")
    ax.set_title(f"{title}\ncost (2) = {cost:.2f}, RMSE to the true function = {rmse:.3f}")
    ax.set_ylim(-2.6, 2.6)
    ax.set_xlim(x_plot[0], x_plot[-1])
axes[0].legend(loc="upper right", fontsize=7, ncol=3)
axes[1].set_xlabel("x")

exchanged = models["with 30 exchange steps (n_exchange=30)"]
curve = exchanged.cost_curve_
n_forward = len(curve) - 2 * exchanged.n_exchange
axes[2].plot(np.arange(1, len(curve) + 1), curve, "k.-", ms=3)
axes[2].axvline(n_forward + 0.5, color="tab:red", lw=1, ls=":")
top = 2.0 * curve[n_forward - 1]
axes[2].set_ylim(0.9 * curve.min(), top)
axes[2].text(n_forward + 1, 0.9 * top, "exchange steps ->", color="tab:red", fontsize=8, va="top")
axes[2].set_xlabel("forward step / exchange half-step (deletion or addition)")
axes[2].set_ylabel("cost (2)")
axes[2].set_title("Sparse MAP cost during selection (n_exchange=30)")
fig.tight_layout()
plt.show()
