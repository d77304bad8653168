"""
===============================================================
Test NLP versus basis size for the classifier's selection rules
===============================================================

How good a sparse GP classifier is depends on how many basis vectors it keeps
(``max_basis``) and on how they are chosen (``selection``). This example fits
:class:`~skgpsparse.SparseGPClassifier` with each of its five selection strategies and a range
of basis sizes, and plots the test negative log predictive probability (NLP, the log loss of
the moderated probabilities; lower is better), in the spirit of Figure 3 of the additive-model
paper (Sundararajan & Shevade, 2012).

To compare the *selection* rules alone, the kernel is fixed (``optimizer=None``), so every
fit uses the same hyperparameters and only the basis differs; the data are generated
(:func:`sklearn.datasets.make_moons` with noise, 1,000 training and 2,000 test points) and
each point is the mean over two random seeds, to keep the example to a few seconds. The
ranking of the criteria depends on the data set; the repository's ``benchmarks/`` compare them
on the papers' benchmark sets.

What to look for:

- ``"nlp"`` (59 candidates per step, scored by the validation NLP) and ``"adaptive"`` (the
  default: 1-2 candidates drawn where the model is wrong, scored by the NLP over all points)
  aim at the test NLP directly; ``"adaptive"`` costs a fraction of ``"nlp"`` (second panel);
- ``"entropy"`` (IVM) and ``"info_gain"`` score every candidate from maintained quantities and
  cost about as much as ``"adaptive"``. They prefer the points whose posterior variance they
  reduce most, which on heavily overlapping classes are the noisy points near the boundary; a
  basis concentrated there can describe the rest of the input space worse than a random one;
- every curve falls as the basis grows, and the differences shrink.
"""

import time

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_moons
from sklearn.gaussian_process.kernels import RBF, ConstantKernel
from sklearn.metrics import log_loss

from skgpsparse import SparseGPClassifier

X, y = make_moons(n_samples=3000, noise=0.3, random_state=1)
X_train, y_train = X[:1000], y[:1000]
X_test, y_test = X[1000:], y[1000:]

kernel = ConstantKernel(4.0) * RBF(0.4)
strategies = ["random", "entropy", "info_gain", "nlp", "adaptive"]
sizes = [4, 8, 16, 32, 64]
seeds = [0, 1]

nlp = {s: np.zeros(len(sizes)) for s in strategies}
seconds = {s: np.zeros(len(sizes)) for s in strategies}
for strategy in strategies:
    for i, size in enumerate(sizes):
        for seed in seeds:
            clf = SparseGPClassifier(
                kernel, max_basis=size, selection=strategy, optimizer=None, random_state=seed
            )
            start = time.perf_counter()
            clf.fit(X_train, y_train)
            seconds[strategy][i] += (time.perf_counter() - start) / len(seeds)
            nlp[strategy][i] += log_loss(y_test, clf.predict_proba(X_test)) / len(seeds)

print("test NLP (mean over seeds)")
print("max_basis  " + "  ".join(f"{s:>9}" for s in strategies))
for i, size in enumerate(sizes):
    print(f"{size:9d}  " + "  ".join(f"{nlp[s][i]:9.4f}" for s in strategies))

# %%
# Test NLP and fit time
# ---------------------

markers = dict(random="o", entropy="s", info_gain="^", nlp="D", adaptive="*")
fig, (ax_nlp, ax_time) = plt.subplots(1, 2, figsize=(11, 4.5))
for strategy in strategies:
    ax_nlp.plot(sizes, nlp[strategy], marker=markers[strategy], label=strategy)
    ax_time.plot(sizes, seconds[strategy], marker=markers[strategy], label=strategy)
for ax in (ax_nlp, ax_time):
    ax.set_xscale("log", base=2)
    ax.set_xticks(sizes, [str(s) for s in sizes])
    ax.set_xlabel("max_basis")
    ax.grid(True, alpha=0.3)
ax_nlp.set_ylabel("test NLP (log loss)")
ax_nlp.set_title("Test NLP, fixed kernel")
ax_nlp.legend(title="selection")
ax_time.set_yscale("log")
ax_time.set_ylabel("fit time [s]")
ax_time.set_title("Fit time (basis selection only)")
fig.tight_layout()
plt.show()
