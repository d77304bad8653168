"""
==============================================================
Basis vectors and decision boundary on banana-shaped classes
==============================================================

A sparse GP classifier on a two-dimensional problem with two overlapping, curved classes, in
the spirit of Figure 3 of the validation paper (Shevade & Sundararajan, 2009), which shows the
basis vectors chosen by the validation NLP criterion on the Banana benchmark with
:math:`d_{max} = N/5`.

The Banana benchmark itself is not shipped with the package, so this example generates a
banana-like data set with :func:`sklearn.datasets.make_moons` (two interleaving half circles)
and heavy noise: 400 training points, as in the paper, of which ``max_basis=80`` (:math:`N/5`)
become basis vectors, chosen with ``selection="nlp"`` (validation NLP loss on random working
sets of 59 candidates). The kernel hyperparameters and the bias are learned by minimising the
same NLP loss, with a small ``max_iter`` to keep the example fast.

The picture shows the moderated probability :math:`p(y = 1 \\mid x)` (validation paper
eq. 2.7) as filled contours, the decision boundary :math:`p = 0.5` as a solid line, and the
basis vectors as black circles. As in the paper, the basis covers the input distribution
rather than only the boundary, so the predictive variance is small wherever there are data;
far from the data the latent variance grows back towards the prior and the probability is
pulled towards 0.5.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.metrics import accuracy_score, log_loss

from skgpsparse import SparseGPClassifier

X, y = make_moons(n_samples=1400, noise=0.35, random_state=0)
X_train, y_train = X[:400], y[:400]
X_test, y_test = X[400:], y[400:]

clf = SparseGPClassifier(
    ConstantKernel(1.0) * RBF(0.5),
    max_basis=80,
    selection="nlp",
    max_iter=3,
    random_state=0,
)
start = time.perf_counter()
clf.fit(X_train, y_train)
fit_time = time.perf_counter() - start

proba = clf.predict_proba(X_test)
print(f"fit: {fit_time:.1f} s, {len(clf.basis_indices_)} basis vectors of {len(X_train)} points")
print(f"learned kernel: {clf.kernel_}, bias: {float(np.ravel(clf.bias_)[0]):.3f}")
print(f"test accuracy: {accuracy_score(y_test, clf.predict(X_test)):.3f}")
print(f"test NLP (log loss): {log_loss(y_test, proba):.3f}")

# %%
# Probability contours, decision boundary and basis vectors
# ----------------------------------------------------------

x0, x1 = np.meshgrid(np.linspace(-2.5, 3.5, 150), np.linspace(-2.0, 2.5, 120))
grid = np.c_[x0.ravel(), x1.ravel()]
p_grid = clf.predict_proba(grid)[:, 1].reshape(x0.shape)

fig, ax = plt.subplots(figsize=(7, 5.5))
filled = ax.contourf(x0, x1, p_grid, levels=np.linspace(0, 1, 11), cmap="RdBu_r", alpha=0.75)
fig.colorbar(filled, ax=ax, label="p(y = 1 | x)")
ax.contour(x0, x1, p_grid, levels=[0.5], colors="k", linewidths=2)
ax.scatter(*X_train[y_train == 0].T, s=12, c="tab:blue", edgecolors="none", label="class 0")
ax.scatter(*X_train[y_train == 1].T, s=12, c="tab:red", edgecolors="none", label="class 1")
ax.scatter(
    *clf.basis_vectors_.T, s=70, facecolors="none", edgecolors="k", linewidths=1.3,
    label=f"basis vectors ({len(clf.basis_indices_)})",
)
ax.set_xlabel("$x_1$")
ax.set_ylabel("$x_2$")
ax.set_title("SparseGPClassifier, selection='nlp', max_basis = N/5")
ax.legend(loc="lower left", fontsize=8, framealpha=0.9)
fig.tight_layout()
plt.show()

# %%
# Latent standard deviation
# -------------------------
#
# The latent variance :math:`\sigma^2(x)` (:meth:`~skgpsparse.SparseGPClassifier.latent_mean_and_variance`)
# is small near the basis vectors and returns to the prior variance :math:`k(x, x)` away from
# them; it is what moderates the probabilities above.

_, latent_var = clf.latent_mean_and_variance(grid)
fig, ax = plt.subplots(figsize=(7, 5.5))
shade = ax.contourf(x0, x1, np.sqrt(latent_var).reshape(x0.shape), levels=12, cmap="viridis")
fig.colorbar(shade, ax=ax, label="latent standard deviation")
ax.scatter(*clf.basis_vectors_.T, s=30, facecolors="none", edgecolors="w", linewidths=1.0)
ax.set_xlabel("$x_1$")
ax.set_ylabel("$x_2$")
ax.set_title("Latent standard deviation and basis vectors")
fig.tight_layout()
plt.show()
