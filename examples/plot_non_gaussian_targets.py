"""
==========================================================
Outliers and counts: the Student-t and Poisson likelihoods
==========================================================

:class:`~skgpsparse.SparseGPRegressor` with a non-Gaussian ``likelihood``: the latent function
``f`` keeps its GP prior on the greedy basis, and the targets are modelled through
``p(y | f(x) + b)``, fitted by EP over every row as the classifier's labels are.

Left: a smooth function with 10 % of the targets shifted by 3 to 6 units (gross errors). The
Gaussian default explains them with a larger noise variance and a flatter, biased mean;
``likelihood="student_t"`` treats them as draws from the heavy tail and follows the other
rows. Right: counts drawn at the rate ``exp(f(x))``. ``likelihood="poisson"`` predicts the
expected count ``exp(m + v / 2)`` (always positive) and its band of +- two standard
deviations of ``y``, the Poisson's spread and the rate's uncertainty together, wider where the
rate is high; the Gaussian default follows a similar mean with one noise level everywhere, and
nothing keeps its mean above zero.
"""

import matplotlib.pyplot as plt
import numpy as np

from skgpsparse import SparseGPRegressor

rng = np.random.RandomState(0)
x_plot = np.linspace(0.0, 10.0, 400)[:, None]

# --- outliers
x = np.sort(rng.uniform(0.0, 10.0, 400))[:, None]
f = np.sin(x[:, 0]) + 0.3 * x[:, 0]
y = f + 0.2 * rng.randn(400)
hit = rng.rand(400) < 0.1
y[hit] += rng.uniform(3.0, 6.0, hit.sum())
gaussian = SparseGPRegressor(max_basis=20, random_state=0).fit(x, y)
robust = SparseGPRegressor(likelihood="student_t", max_basis=20, random_state=0).fit(x, y)

# --- counts
xc = np.sort(rng.uniform(0.0, 10.0, 400))[:, None]
rate = np.exp(1.5 * np.sin(xc[:, 0]) - 0.5)
counts = rng.poisson(rate).astype(float)
counting = SparseGPRegressor(likelihood="poisson", max_basis=20, random_state=0).fit(xc, counts)
gaussian_counts = SparseGPRegressor(max_basis=20, random_state=0).fit(xc, counts)

fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
left.scatter(x[~hit, 0], y[~hit], s=6, c="0.6", label="targets")
left.scatter(x[hit, 0], y[hit], s=10, c="tab:red", marker="x", label="gross errors")
left.plot(x_plot[:, 0], np.sin(x_plot[:, 0]) + 0.3 * x_plot[:, 0], "k--", lw=1, label="f")
left.plot(x_plot[:, 0], gaussian.predict(x_plot), c="tab:orange", label="gaussian")
left.plot(x_plot[:, 0], robust.predict(x_plot), c="tab:blue", label="student_t")
left.set_title("Gross errors in 10 % of the targets")
left.legend(loc="upper left", fontsize=8)

mean, std = counting.predict(x_plot, return_std=True)
right.scatter(xc[:, 0], counts, s=6, c="0.6", label="counts")
right.plot(x_plot[:, 0], np.exp(1.5 * np.sin(x_plot[:, 0]) - 0.5), "k--", lw=1, label="rate")
right.plot(x_plot[:, 0], mean, c="tab:blue", label="poisson: E[y]")
right.fill_between(x_plot[:, 0], np.maximum(mean - 2 * std, 0), mean + 2 * std,
                   color="tab:blue", alpha=0.15, label="+- 2 sd of y")
right.plot(x_plot[:, 0], gaussian_counts.predict(x_plot), c="tab:orange", label="gaussian")
right.set_title("Counts")
right.legend(loc="upper right", fontsize=8)
fig.tight_layout()
plt.show()

print(f"gaussian: mean squared error to f {np.mean((gaussian.predict(x) - f) ** 2):.4f}")
print(f"student_t: mean squared error to f {np.mean((robust.predict(x) - f) ** 2):.4f}")
print(f"poisson: smallest predicted count {counting.predict(x_plot).min():.3f}, "
      f"gaussian's {gaussian_counts.predict(x_plot).min():.3f}")
