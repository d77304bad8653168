"""Bayesian optimisation: scikit-learn's GPR refitted every step against ``partial_fit``.

The same expected-improvement loop (issue 36) on Branin (2-D) and Hartmann-6, from an initial
design of ``2 d + 1`` uniform points, ``--iterations`` evaluations after it, ``--seeds`` seeds.
Each step predicts the mean and standard deviation at candidate points (``--candidates``
uniform points plus as many Gaussian perturbations of the best point so far, the same
candidates for both models at a given seed and step), evaluates the candidate of largest
expected improvement, and updates the model:

- ``sklearn``: ``GaussianProcessRegressor(C * Matern(nu=2.5, ARD), normalize_y=True)``
  refitted on every evaluation so far, its hyperparameters learned by L-BFGS-B from the
  constructor's kernel at every step (what scikit-optimize's GP minimiser does);
- ``ours``: ``SparseGPRegressor`` with the same kernel, ``max_basis`` above the number of
  evaluations (so every evaluation is a basis vector and the model is the full GP),
  ``partial_fit`` with the new evaluation at every step (the basis grows by it: O(p^2) for the
  statistics, O(p^3) for the prediction's factors), and a ``fit`` with ``warm_start=True`` on
  all evaluations every ``--relearn`` steps (10 by default) and whenever the evaluations have
  grown ``--growth``-fold since the last such fit (1.5 by default), which re-learns the
  hyperparameters from the previous ones, by L-BFGS-B capped at ``--lbfgs-steps`` iterations
  (15 by default, an ``optimizer`` callable of scikit-learn's contract; 0 for the
  estimator's own search to convergence).

Both run with one BLAS thread. The table gives, per function and model, the median over seeds
of the model's wall and CPU seconds (updates and fits) and of the whole loop's (with the
predictions at the candidates), the ratio ours / sklearn, and the simple regret
``min f(x_i) - f*`` at iterations 50, 100, 200 (median and quartiles over seeds) and a paired
test of the regrets at 200 over the seeds (Wilcoxon's signed-rank test); the plot
shows the median log10 regret against the iteration with the quartiles shaded, and the
cumulative model time.

Goal (issue 36): the same regret at a tenth of the time or less by iteration 200.

Usage::

    python benchmarks/peers/bayes_opt.py                     # 200 iterations, 10 seeds
    python benchmarks/peers/bayes_opt.py --seeds 3           # fewer seeds
    python benchmarks/peers/bayes_opt.py --quick             # 30 iterations, 2 seeds, no files

Writes ``benchmarks/peers/results/bayes_opt.md`` and ``bayes_opt.png`` (and the per-run curves in
``bayes_opt_runs.json``).
"""

import argparse
import json
import shlex
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from scipy.special import ndtr

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _common.machine import machine  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


# ---------------------------------------------------------------------- test functions
def branin(X):
    """Branin-Hoo on [-5, 10] x [0, 15]; minimum 0.397887 (three minimisers)."""
    x1, x2 = X[:, 0], X[:, 1]
    b, c, t = 5.1 / (4 * np.pi**2), 5 / np.pi, 1 / (8 * np.pi)
    return (x2 - b * x1**2 + c * x1 - 6) ** 2 + 10 * (1 - t) * np.cos(x1) + 10


_H_ALPHA = np.array([1.0, 1.2, 3.0, 3.2])
_H_A = np.array([
    [10, 3, 17, 3.5, 1.7, 8], [0.05, 10, 17, 0.1, 8, 14],
    [3, 3.5, 1.7, 10, 17, 8], [17, 8, 0.05, 10, 0.1, 14],
])
_H_P = 1e-4 * np.array([
    [1312, 1696, 5569, 124, 8283, 5886], [2329, 4135, 8307, 3736, 1004, 9991],
    [2348, 1451, 3522, 2883, 3047, 6650], [4047, 8828, 8732, 5743, 1091, 381],
])


def hartmann6(X):
    """Hartmann-6 on [0, 1]^6; minimum -3.32237."""
    inner = np.einsum("ij,nij->ni", _H_A, (X[:, None, :] - _H_P[None]) ** 2)
    return -np.exp(-inner) @ _H_ALPHA


FUNCTIONS = {
    "branin": (branin, np.array([[-5.0, 10.0], [0.0, 15.0]]), 0.397887),
    "hartmann6": (hartmann6, np.tile([0.0, 1.0], (6, 1)), -3.32237),
}


# ---------------------------------------------------------------------- models
def kernel_for(d):
    from sklearn.gaussian_process.kernels import ConstantKernel, Matern

    return ConstantKernel(1.0, (1e-3, 1e3)) * Matern(np.full(d, 0.3), (1e-2, 1e2), nu=2.5)


class SklearnModel:
    """scikit-learn's GPR, refitted with hyperparameter learning at every step."""

    name = "sklearn"

    def __init__(self, d, seed, relearn):
        from sklearn.gaussian_process import GaussianProcessRegressor

        self.gpr = GaussianProcessRegressor(
            kernel_for(d), alpha=1e-8, normalize_y=True, random_state=seed
        )

    def start(self, X, y):
        self.gpr.fit(X, y)

    def add(self, X, y, x_new, y_new):
        self.gpr.fit(X, y)  # X, y hold every evaluation, the new one included

    def predict(self, X):
        return self.gpr.predict(X, return_std=True)


def lbfgs_steps(steps):
    """scikit-learn's ``optimizer`` contract: L-BFGS-B from the given theta, at most
    ``steps`` iterations. From a warm start (the previous fit's theta) the objective is
    within a few 1e-3 nats of its optimum after about ten; the default search's stall rule
    (ten iterations together gaining < 1e-4 nats per row) and its moving box ran 20 to 250
    evaluations per re-learn."""
    import scipy.optimize

    def optimizer(obj_func, initial_theta, bounds):
        res = scipy.optimize.minimize(
            obj_func, initial_theta, jac=True, method="L-BFGS-B", bounds=bounds,
            options={"maxiter": steps},
        )
        return res.x, res.fun

    return optimizer


class PartialFitModel:
    """SparseGPRegressor: partial_fit every step; a warm_start fit after ``relearn`` steps,
    or once the evaluations have grown by the factor ``growth`` since the last fit; with
    ``steps``, its L-BFGS-B capped at that many iterations (:func:`lbfgs_steps`)."""

    name = "ours"
    growth = None
    steps_cap = None

    def __init__(self, d, seed, relearn):
        from skgpsparse import SparseGPRegressor

        optimizer = "fmin_l_bfgs_b" if self.steps_cap is None else lbfgs_steps(self.steps_cap)
        self.model = SparseGPRegressor(
            kernel_for(d), noise_variance=1e-6, noise_variance_bounds="fixed",
            max_basis=512, normalize_y=True, max_iter=1, refine_basis=0,
            noise_calibration=None, warm_start=True, random_state=seed, optimizer=optimizer,
        )
        self.relearn, self.steps, self.n_fit = relearn, 0, 0

    def start(self, X, y):
        self.model.fit(X, y)
        self.n_fit = len(y)

    def add(self, X, y, x_new, y_new):
        self.steps += 1
        grown = self.growth is not None and len(y) >= self.growth * self.n_fit
        if self.steps % self.relearn == 0 or grown:
            self.steps, self.n_fit = 0, len(y)
            self.model.fit(X, y)  # warm start: from the previous hyperparameters and basis
        else:
            self.model.partial_fit(x_new, y_new)

    def predict(self, X):
        return self.model.predict(X, return_std=True)


# ---------------------------------------------------------------------- the loop
def expected_improvement(mean, std, best):
    """EI for minimisation (Jones et al. 1998), ``(b - m) Phi(z) + s phi(z)`` with
    ``z = (b - m) / s``: the normal's cdf by ``scipy.special.ndtr`` and its density written
    out (``scipy.stats.norm``'s methods gave the same values at 3.6 times the cost, 0.34
    against 0.094 ms for 2,000 candidates)."""
    std = np.maximum(std, 1e-12)
    improvement = best - mean
    z = improvement / std
    return improvement * ndtr(z) + std * (np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi))


def run(model_class, function_name, seed, iterations, n_candidates, relearn):
    """One BO run; returns the regret after each evaluation and the model's and loop's times."""
    f, bounds, f_min = FUNCTIONS[function_name]
    d = len(bounds)
    lo, width = bounds[:, 0], bounds[:, 1] - bounds[:, 0]
    rng = np.random.RandomState(seed)
    X = lo + width * rng.rand(2 * d + 1, d)
    y = f(X)
    model = model_class(d, seed, relearn)
    model_wall = model_cpu = 0.0
    loop_wall, loop_cpu = time.perf_counter(), time.process_time()

    def timed(call, *args):
        nonlocal model_wall, model_cpu
        w, c = time.perf_counter(), time.process_time()
        call(*args)
        model_wall += time.perf_counter() - w
        model_cpu += time.process_time() - c

    timed(model.start, X, y)
    regret = [float(np.min(y) - f_min)]
    for _ in range(iterations):
        best = X[np.argmin(y)]
        local = best + 0.05 * width * rng.randn(n_candidates, d)
        candidates = np.clip(
            np.vstack([lo + width * rng.rand(n_candidates, d), local]), lo, lo + width
        )
        mean, std = model.predict(candidates)
        x_new = candidates[np.argmax(expected_improvement(mean, std, np.min(y)))][None]
        y_new = f(x_new)
        X, y = np.vstack([X, x_new]), np.append(y, y_new)
        timed(model.add, X, y, x_new, y_new)
        regret.append(float(np.min(y) - f_min))
    return dict(
        regret=regret, model_wall=model_wall, model_cpu=model_cpu,
        loop_wall=time.perf_counter() - loop_wall, loop_cpu=time.process_time() - loop_cpu,
    )


def quartiles(values):
    q = np.percentile(values, [25, 50, 75])
    return f"{q[1]:.3g} [{q[0]:.2g}, {q[2]:.2g}]"


def paired(runs, reference, i):
    """The paired comparison of the regrets at iteration ``i`` over the seeds: the median
    log10 ratio to ``reference``'s run of the same seed, the seeds where it is lower / higher,
    and the two-sided p-value of Wilcoxon's signed-rank test on the log ratios (ties, equal
    regrets, split between the signs: scipy's ``zero_method="zsplit"``)."""
    from scipy.stats import wilcoxon

    d = np.log10(np.maximum([r["regret"][i] for r in runs], 1e-300)) - np.log10(
        np.maximum([r["regret"][i] for r in reference], 1e-300))
    p = 1.0 if np.all(d == 0) else float(wilcoxon(d, zero_method="zsplit").pvalue)
    return f"{np.median(d):+.2f}, {int(np.sum(d < 0))}/{int(np.sum(d > 0))}, p={p:.2f}"


def plot(runs, iterations, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(runs)
    fig, axes = plt.subplots(2, len(names), figsize=(5.5 * len(names), 7), squeeze=False)
    for col, fname in enumerate(names):
        for i, model in enumerate(runs[fname]):
            style = f"C{[0, 3, 2, 1][i % 4]}"
            curves = np.log10(np.maximum([r["regret"] for r in runs[fname][model]], 1e-12))
            x = np.arange(curves.shape[1])
            q = np.percentile(curves, [25, 50, 75], axis=0)
            label = ("scikit-learn GPR, refit every step" if model == "sklearn"
                     else "partial_fit, warm_start fit: " + model.split(", ", 1)[-1])
            axes[0, col].plot(x, q[1], color=style, label=label)
            axes[0, col].fill_between(x, q[0], q[2], color=style, alpha=0.2)
            times = [r["model_cpu"] for r in runs[fname][model]]
            axes[1, col].bar(model, np.median(times), color=style)
        axes[0, col].set(title=f"{fname}: simple regret (median, quartiles)",
                         xlabel="iteration", ylabel="log10(min f - f*)")
        axes[0, col].legend(fontsize=8)
        axes[1, col].set(title=f"{fname}: model CPU seconds over {iterations} iterations",
                         ylabel="seconds (median over seeds)")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="seeds first-seed, ..., first-seed + seeds - 1 (to split the "
                        "seeds of a function between processes, merged by --load)")
    parser.add_argument("--candidates", type=int, default=1000,
                        help="uniform candidates per step (and as many local ones)")
    parser.add_argument("--relearn", type=int, default=10,
                        help="ours: a warm_start fit every this many steps")
    parser.add_argument("--lbfgs-steps", type=int, default=15,
                        help="ours: L-BFGS-B iterations per fit (0: the estimator's default "
                        "search, to convergence)")
    parser.add_argument("--growth", type=float, default=1.5,
                        help="ours: also a warm_start fit once the evaluations have grown by "
                        "this factor since the last fit (0: none)")
    parser.add_argument("--functions", nargs="+", default=list(FUNCTIONS))
    parser.add_argument("--quick", action="store_true", help="30 iterations, 2 seeds, no files")
    parser.add_argument("--name", default="bayes_opt", help="stem of the files in results/")
    parser.add_argument("--models", nargs="+", default=["sklearn", "ours"],
                        choices=["sklearn", "ours"], help="which loops to run")
    parser.add_argument("--load", nargs="+", default=None, metavar="NAME",
                        help="no runs: merge results/NAME_runs.json files (e.g. one per "
                        "function run in parallel) into the table and plot of --name")
    args = parser.parse_args(argv)
    if args.quick:
        args.iterations, args.seeds = 30, 2
    from threadpoolctl import threadpool_limits

    runs = {}
    for name in args.load or ():
        for fname, by_model in json.loads((RESULTS / f"{name}_runs.json").read_text()).items():
            for model, model_runs in by_model.items():
                model = "ours, k=20" if model == "ours" else model  # files of the first runs
                # files of the same function (other seeds) add their runs
                runs.setdefault(fname, {}).setdefault(model, []).extend(model_runs)
    if args.load:
        any_runs = next(iter(runs.values()))["sklearn"]
        args.iterations, args.seeds = len(any_runs[0]["regret"]) - 1, len(any_runs)
        args.functions = []
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # hyperparameters at their bounds, max_basis clipped
        classes = [c for c in (SklearnModel, PartialFitModel) if c.name in args.models]
        for fname in args.functions:
            PartialFitModel.growth = args.growth or None
            PartialFitModel.steps_cap = args.lbfgs_steps or None
            label = {"sklearn": "sklearn", "ours": f"ours, k={args.relearn}" + (
                f", x{args.growth:g}" if args.growth else "") + (
                f", {args.lbfgs_steps} steps" if args.lbfgs_steps else "")}
            runs[fname] = {label[c.name]: [] for c in classes}
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                for model_class in classes:  # back to back per seed
                    r = run(model_class, fname, seed, args.iterations, args.candidates,
                            args.relearn)
                    runs[fname][label[model_class.name]].append(r)
                    print(
                        f"{fname} seed {seed} {model_class.name:8s} regret "
                        f"{r['regret'][-1]:.3g}, model {r['model_wall']:.2f} s wall "
                        f"{r['model_cpu']:.2f} s CPU, loop {r['loop_wall']:.2f} s", flush=True,
                    )
                if not args.quick:  # the runs so far, should the process be stopped
                    RESULTS.mkdir(exist_ok=True)
                    (RESULTS / f"{args.name}_runs.json").write_text(json.dumps(runs))
    rows = []
    checkpoints = [i for i in (50, 100, 200) if i <= args.iterations] or [args.iterations]
    for fname, by_model in runs.items():
        med = {m: {k: float(np.median([r[k] for r in rs])) for k in
                   ("model_wall", "model_cpu", "loop_wall", "loop_cpu")}
               for m, rs in by_model.items()}
        for m in by_model:
            regrets = [quartiles([r["regret"][i] for r in by_model[m]]) for i in checkpoints]
            against = m != "sklearn" and "sklearn" in med
            ratio = ("" if not against else
                     f"{med[m]['model_cpu'] / med['sklearn']['model_cpu']:.3f} / "
                     f"{med[m]['loop_cpu'] / med['sklearn']['loop_cpu']:.3f}")
            test = (paired(by_model[m], by_model["sklearn"], checkpoints[-1])
                    if against and len(by_model[m]) == len(by_model["sklearn"]) else "")
            rows.append(
                f"| {fname} | {m} | {med[m]['model_wall']:.2f} / {med[m]['model_cpu']:.2f} | "
                f"{med[m]['loop_wall']:.2f} / {med[m]['loop_cpu']:.2f} | {ratio} | "
                + " | ".join(regrets) + f" | {test} |"
            )
    header = (
        "| function | model | model time s, wall / CPU | loop time s, wall / CPU | "
        "ours / sklearn CPU, model / loop | "
        + " | ".join(f"regret at {i}" for i in checkpoints)
        + f" | paired at {checkpoints[-1]}: median log10(ours / sklearn), seeds lower/higher, "
        "Wilcoxon p |"
    )
    table = [header, "|" + "---|" * (6 + len(checkpoints))] + rows
    print("\n".join(table))
    if args.quick:
        return
    load = Path("/proc/loadavg").read_text().split()[0]
    date = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# Bayesian optimisation: scikit-learn's GPR refitted every step against partial_fit",
        "",
        f"Machine: {machine()}; {date}; one BLAS thread; load average {load} at the end "
        "(a shared machine: wall times are inflated; " + (
            f"merged from the runs of results/{{{','.join(args.load)}}}_runs.json, each "
            "function in its own process, the two models of a seed back to back)."
            if args.load else "the two models of a seed ran back to back)."),
        f"`python benchmarks/peers/bayes_opt.py{' ' + shlex.join(argv) if argv else ''}`: "
        f"{args.iterations} iterations after 2d + 1 uniform points, {args.seeds} seeds, "
        f"{args.candidates} uniform + {args.candidates} local candidates per step, ours "
        "re-learning its hyperparameters by a warm_start fit on the schedule in its label "
        "(every k steps, with xg also once the evaluations grew g-fold since the last, with "
        "'s steps' L-BFGS-B capped at s iterations). Times are medians over seeds of the sums "
        "over the run; regret is min f - f* (median [quartiles] over seeds); the last column "
        "pairs each seed's runs: the median over seeds of log10(regret ours / regret "
        "sklearn) at the last iteration, the seeds where ours is lower / higher, and the "
        "two-sided p-value of Wilcoxon's signed-rank test on those log ratios.",
        "",
        *table,
        "",
        f"![regret and time]({args.name}.png)",
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines) + "\n")
    (RESULTS / f"{args.name}_runs.json").write_text(json.dumps(runs))
    plot(runs, args.iterations, RESULTS / f"{args.name}.png")


if __name__ == "__main__":
    main(sys.argv[1:])
