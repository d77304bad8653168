"""
===============================================
Bayesian optimisation with ``partial_fit``
===============================================

An expected-improvement loop on the Branin function (minimum 0.397887 on
:math:`[-5, 10] \\times [0, 15]`), run twice from the same five starting points and with the
same candidate points at every step:

- scikit-learn's :class:`~sklearn.gaussian_process.GaussianProcessRegressor` refitted on every
  evaluation so far, its hyperparameters learned again at every step;
- :class:`~skgpsparse.SparseGPRegressor` updated with each new evaluation by
  :meth:`~skgpsparse.SparseGPRegressor.partial_fit` (an :math:`O(p^2)` update of the
  posterior; the basis grows by the new point, so with ``max_basis`` above the number of
  evaluations the model is the full GP), and refitted with ``warm_start=True`` every 10
  steps, and sooner while the evaluations are few (whenever they have grown 1.5-fold since
  the last fit), which re-learns the hyperparameters starting from the previous ones. From there a
  few L-BFGS-B iterations suffice: the ``optimizer`` (scikit-learn's contract) stops after
  15, where the default search runs until its iterations stop paying.

The left panel shows the simple regret :math:`\\min_i f(x_i) - f^*` against the iteration,
the right one the time spent in the models' fits and updates (CPU seconds, cumulative).
``benchmarks/peers/bayes_opt.py`` runs the same comparison with 200 iterations, ten seeds and
Hartmann-6 (see the benchmarks page).
"""

import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from scipy.optimize import minimize
from scipy.stats import norm
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import ConstantKernel, Matern

from skgpsparse import SparseGPRegressor


def branin(X):
    x1, x2 = X[:, 0], X[:, 1]
    b, c, t = 5.1 / (4 * np.pi**2), 5 / np.pi, 1 / (8 * np.pi)
    return (x2 - b * x1**2 + c * x1 - 6) ** 2 + 10 * (1 - t) * np.cos(x1) + 10


F_MIN, LOW, WIDTH = 0.397887, np.array([-5.0, 0.0]), np.array([15.0, 15.0])
N_ITER, RELEARN, GROWTH = 30, 10, 1.5
kernel = ConstantKernel(1.0, (1e-3, 1e3)) * Matern([0.3, 0.3], (1e-2, 1e2), nu=2.5)


def expected_improvement(mean, std, best):
    z = (best - mean) / np.maximum(std, 1e-12)
    return (best - mean) * norm.cdf(z) + std * norm.pdf(z)


def optimise(update):
    """The loop; ``update(model, X, y, x_new, y_new, step)`` updates the model."""
    rng = np.random.RandomState(0)
    X = LOW + WIDTH * rng.rand(5, 2)
    y = branin(X)
    model, seconds = update(None, X, y, None, None, 0), [0.0]
    for step in range(1, N_ITER + 1):
        candidates = LOW + WIDTH * rng.rand(1000, 2)
        mean, std = model.predict(candidates, return_std=True)
        x_new = candidates[np.argmax(expected_improvement(mean, std, y.min()))][None]
        X, y = np.vstack([X, x_new]), np.append(y, branin(x_new))
        tic = time.process_time()
        model = update(model, X, y, x_new, y[-1:], step)
        seconds.append(seconds[-1] + time.process_time() - tic)
    return np.minimum.accumulate(y)[4:] - F_MIN, np.array(seconds)


def refit_sklearn(model, X, y, x_new, y_new, step):
    return GaussianProcessRegressor(kernel, alpha=1e-8, normalize_y=True).fit(X, y)


def few_lbfgs_steps(obj_func, initial_theta, bounds):
    # scikit-learn's optimizer contract; from a warm start 15 iterations are plenty
    res = minimize(obj_func, initial_theta, jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": 15})
    return res.x, res.fun


last_fit = {"rows": 0}  # the number of evaluations at the last warm_start fit


def stream_ours(model, X, y, x_new, y_new, step):
    # re-learn every RELEARN steps, and whenever the evaluations have grown GROWTH-fold since
    # the last fit (often while they are few, when the hyperparameters move most)
    if model is None or step % RELEARN == 0 or len(y) >= GROWTH * last_fit["rows"]:
        model = model or SparseGPRegressor(
            kernel, noise_variance=1e-6, noise_variance_bounds="fixed", max_basis=100,
            normalize_y=True, max_iter=1, refine_basis=0, warm_start=True, random_state=0,
            optimizer=few_lbfgs_steps,
        )
        last_fit["rows"] = len(y)
        return model.fit(X, y)  # warm start after the first fit
    return model.partial_fit(x_new, y_new)


with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # max_basis above the evaluations; bounds reached
    results = {
        "scikit-learn GPR, refitted every step": optimise(refit_sklearn),
        "SparseGPRegressor.partial_fit + warm_start": optimise(stream_ours),
    }

fig, (ax_regret, ax_time) = plt.subplots(1, 2, figsize=(10, 4))
for (label, (regret, seconds)), color in zip(results.items(), ("tab:blue", "tab:red")):
    ax_regret.semilogy(regret, color=color, label=label)
    ax_time.plot(seconds, color=color, label=label)
    print(f"{label}: regret {regret[-1]:.2e} after {N_ITER} steps, {seconds[-1]:.2f} s CPU")
ax_regret.set(xlabel="iteration", ylabel="min f(x_i) - f*", title="Simple regret on Branin")
ax_time.set(xlabel="iteration", ylabel="CPU seconds", title="Time in fits and updates")
ax_regret.legend(fontsize=8)
fig.tight_layout()
plt.show()
