"""Student-t and Poisson likelihoods against their peers in one run (issue 47's goals).

Two tasks, every model on the same splits, on one thread (BLAS, OpenMP and TensorFlow), fit
CPU by process time, the table's figures medians over the seeds a model ran on:

- **Counts** (``count_doctorvisits``, ``count_nmes1988``; no split in the source, so each
  seed draws a random 75 / 25 split; features standardised on the training rows, raw counts):
  mean Poisson deviance (``sklearn.metrics.mean_poisson_deviance``) and mean test log
  predictive probability of the count (LPD, higher is better) of
  ``SparseGPRegressor(likelihood="poisson")``, the Gaussian default ``SparseGPRegressor()``
  (its mean clipped at ``CLIP`` for the deviance; its LPD the mass of its Gaussian predictive
  on ``[y - 1/2, y + 1/2]``), ``HistGradientBoostingRegressor(loss="poisson")`` and
  ``PoissonRegressor`` (alpha 1, and alpha by 5-fold cross-validation on the training rows;
  LPD of these two: the Poisson probability at the predicted mean), and GPflow's SVGP with a
  Poisson likelihood (100 inducing inputs from k-means, optimised, full-batch L-BFGS).
- **Robust** (KIN40K and pol, 8,000 random rows of the standard training set, tested on the
  standard test rows; inputs and targets standardised on the clean training rows, then 10 %
  of the training targets shifted by 3-10 standard deviations with a random sign): test NMSE
  and NLPD on the clean test targets of ``SparseGPRegressor(likelihood="student_t")`` (on the
  corrupted and on the clean targets), the Gaussian default on the clean and on the
  corrupted targets, ``HistGradientBoostingRegressor`` with squared and absolute error (no
  predictive density: no NLPD), GPflow's SVGP with a Student-t likelihood (4 degrees of
  freedom, fixed) and GPflow's SGPR (Gaussian), both with 100 inducing inputs from k-means,
  optimised, on the corrupted targets.

The package's likelihoods are fitted only when ``SparseGPRegressor`` takes ``likelihood``
(else skipped, and the goals give the figures to reach); their log predictive density is the
first method of ``LPD_METHODS`` the estimator has (``method(X, y)``, per row or the mean).
Every count model runs on ``--seeds`` splits; on the robust sets the GP models run on the
first ``--gp-seeds`` of them only. A goal's ratio takes the medians over the seeds both sides
ran on. Records, table and figure: ``results/likelihoods_runs.json``, ``.md``, ``.png``.

Usage::

    python benchmarks/peers/likelihoods.py                 # everything (about 20 min)
    python benchmarks/peers/likelihoods.py --quick         # a smoke run (nothing saved)
    python benchmarks/peers/likelihoods.py --tasks counts --models hgb_poisson,poisson_glm
"""

import argparse
import json
import os
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import sklearn
from scipy.stats import poisson
from threadpoolctl import threadpool_limits

import skgpsparse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common.data import load_dataset
from _common.machine import machine
from _common.peers import (
    _kmeans_inducing,
    count_metrics,
    fit_sgpr,
    fit_svgp_likelihood,
    gaussian_count_log_mass,
    regression_metrics,
    standardise,
)

RESULTS = Path(__file__).resolve().parent / "results"
DATASETS = {"counts": ("doctorvisits", "nmes1988"), "robust": ("kin40k", "pol")}
TRAIN_ROWS = 8000  # robust task: training rows drawn from the standard training set
CORRUPT_SHARE = 0.1
CLIP = 1e-3  # the Gaussian default's predicted counts are clipped here for the deviance
LPD_METHODS = ("log_predictive_density", "predict_log_density", "log_predictive")

# label -> (task, kind, targets): kind "ours" (needs the likelihood parameter), "gp" (on the
# robust sets run on --gp-seeds) or "cheap"; targets "clean" or "corrupt" (robust task)
MODELS = {
    "ours_poisson": ("counts", "ours", None),
    "gaussian_default": ("counts", "gp", None),
    "hgb_poisson": ("counts", "cheap", None),
    "poisson_glm": ("counts", "cheap", None),
    "poisson_glm_cv": ("counts", "cheap", None),
    "svgp_poisson": ("counts", "gp", None),
    "ours_student_t": ("robust", "ours", "corrupt"),
    "ours_student_t_clean": ("robust", "ours", "clean"),
    "gaussian_clean": ("robust", "gp", "clean"),
    "gaussian_corrupt": ("robust", "gp", "corrupt"),
    "hgb_squared": ("robust", "cheap", "corrupt"),
    "hgb_absolute": ("robust", "cheap", "corrupt"),
    "svgp_student_t": ("robust", "gp", "corrupt"),
    "sgpr_corrupt": ("robust", "gp", "corrupt"),
}


def count_split(name, seed, quick=False):
    """``(X_train, y_train, X_test, y_test)``: a random 75 / 25 split, standardised features."""
    d = load_dataset(f"count_{name}")
    X, y = d["X"].astype(float), d["y"].astype(float)
    order = np.random.default_rng(seed).permutation(y.size)
    te, tr = order[: y.size // 4], order[y.size // 4:]
    if quick:
        tr, te = tr[:800], te[:800]
    X_train, X_test = standardise(X[tr], X[te])
    return X_train, y[tr], X_test, y[te]


def robust_split(name, seed, quick=False):
    """``(X_train, y_clean, y_corrupt, X_test, y_test)`` of the robust task (module docstring)."""
    d = load_dataset(name)
    X, y = d["X"].astype(float), d["y"].astype(float)
    rng = np.random.default_rng(seed)
    tr = rng.permutation(d["train_idx"][0])[: 800 if quick else TRAIN_ROWS]
    te = d["test_idx"][0][:2000] if quick else d["test_idx"][0]
    X_train, X_test, y_train, y_test = standardise(X[tr], X[te], y[tr], y[te])
    hit = rng.choice(tr.size, round(CORRUPT_SHARE * tr.size), replace=False)
    y_corrupt = y_train.copy()
    y_corrupt[hit] += rng.choice([-1.0, 1.0], hit.size) * rng.uniform(3.0, 10.0, hit.size)
    return X_train, y_train, y_corrupt, X_test, y_test


def has_likelihood():
    """Whether the installed SparseGPRegressor takes ``likelihood``."""
    from skgpsparse import SparseGPRegressor

    return "likelihood" in SparseGPRegressor().get_params()


def our_log_density(model, X, y):
    """``log p(y_* | x_*)`` per test row from the estimator's documented method (NaN if none)."""
    for name in LPD_METHODS:
        method = getattr(model, name, None)
        if method is not None:
            out = np.asarray(method(X, y), float)
            return out if out.ndim else np.full(len(y), float(out))
    likelihood = getattr(model, "likelihood_", None)
    if hasattr(likelihood, "log_predictive") and hasattr(model, "latent_mean_and_variance"):
        return likelihood.log_predictive(y, *model.latent_mean_and_variance(X))
    return np.full(len(y), np.nan)


def robust_metrics(y, mean, log_density=None):
    """Test NMSE of the mean, and NLPD when there is a predictive density."""
    nlpd = np.nan if log_density is None else -float(np.mean(log_density))
    return {"nmse": float(np.mean((y - mean) ** 2) / np.var(y)), "nlpd": nlpd}


def timed_fit(model, X, y):
    """The CPU seconds (process time) of ``model.fit(X, y)``."""
    cpu = time.process_time()
    model.fit(X, y)
    return time.process_time() - cpu


def fit_counts(label, X, y, X_test, y_test, seed, svgp_maxiter):
    """One model of the counts task: its metrics and fit CPU."""
    from sklearn.ensemble import HistGradientBoostingRegressor
    from sklearn.linear_model import PoissonRegressor
    from sklearn.model_selection import GridSearchCV

    from skgpsparse import SparseGPRegressor

    if label == "svgp_poisson":
        rec = fit_svgp_likelihood(X, y, X_test, y_test, "poisson", seed=seed, maxiter=svgp_maxiter)
        out = count_metrics(y_test, rec["mean"], rec["log_density"], CLIP)
        out.update(fit_cpu=rec["fit_cpu"], iterations=rec["iterations"])
        return out
    if label == "ours_poisson":
        model = SparseGPRegressor(likelihood="poisson", random_state=seed)
    elif label == "gaussian_default":
        model = SparseGPRegressor(random_state=seed)
    elif label == "hgb_poisson":
        model = HistGradientBoostingRegressor(loss="poisson", random_state=seed)
    elif label == "poisson_glm":
        model = PoissonRegressor(max_iter=1000)
    else:  # poisson_glm_cv: alpha by 5-fold CV of the deviance on the training rows
        model = GridSearchCV(PoissonRegressor(max_iter=1000),
                             {"alpha": np.logspace(-4, 1, 11)},
                             scoring="neg_mean_poisson_deviance", cv=5)
    cpu = timed_fit(model, X, y)
    if label == "gaussian_default":
        mean, std = model.predict(X_test, return_std=True)
        log_density = gaussian_count_log_mass(y_test, mean, std**2 + model.noise_variance_)
    elif label == "ours_poisson":
        mean, log_density = model.predict(X_test), our_log_density(model, X_test, y_test)
    else:
        mean = model.predict(X_test)
        log_density = poisson.logpmf(y_test, np.maximum(mean, 1e-300))
    out = count_metrics(y_test, mean, log_density, CLIP)
    out["fit_cpu"] = cpu
    if label == "poisson_glm_cv":
        out["alpha"] = float(model.best_params_["alpha"])
    return out


def fit_robust(label, X, y_clean, y_corrupt, X_test, y_test, seed, svgp_maxiter):
    """One model of the robust task on its targets: its metrics and fit CPU."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    from skgpsparse import SparseGPRegressor

    y = y_clean if MODELS[label][2] == "clean" else y_corrupt
    if label == "svgp_student_t":
        rec = fit_svgp_likelihood(X, y, X_test, y_test, "student_t", seed=seed,
                                  maxiter=svgp_maxiter)
        out = robust_metrics(y_test, rec["mean"], rec["log_density"])
        out.update(fit_cpu=rec["fit_cpu"], iterations=rec["iterations"], scale=rec["scale"])
        return out
    if label == "sgpr_corrupt":
        cpu = time.process_time()
        Z = _kmeans_inducing(X, 100, seed)
        cpu = time.process_time() - cpu
        rec = fit_sgpr(X, y, X_test, y_test, 100, optimise_inducing=True, seed=seed,
                       inducing=Z, maxiter=svgp_maxiter)
        return {"nmse": rec["nmse"], "nlpd": rec["nlpd"], "fit_cpu": rec["fit_cpu"] + cpu,
                "iterations": rec["iterations"], "noise_variance": rec["noise_variance"]}
    if label.startswith("ours_student_t"):
        model = SparseGPRegressor(likelihood="student_t", random_state=seed)
    elif label.startswith("gaussian"):
        model = SparseGPRegressor(random_state=seed)
    else:
        loss = "squared_error" if label == "hgb_squared" else "absolute_error"
        model = HistGradientBoostingRegressor(loss=loss, random_state=seed)
    cpu = timed_fit(model, X, y)
    if label.startswith("gaussian"):
        mean, std = model.predict(X_test, return_std=True)
        out = regression_metrics(y_test, mean, std**2 + model.noise_variance_)
        out = {"nmse": out["nmse"], "nlpd": out["nlpd"]}
    elif label.startswith("ours"):
        mean = model.predict(X_test)
        out = robust_metrics(y_test, mean, our_log_density(model, X_test, y_test))
    else:
        out = robust_metrics(y_test, model.predict(X_test))
    out["fit_cpu"] = cpu
    return out


def run(args):
    """Every (data set, model, seed) of the run, in order; the records as they finish."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    ours = has_likelihood()
    records, skipped = [], []
    labels = args.models.split(",") if args.models else list(MODELS)
    for task in args.tasks:
        for name in DATASETS[task]:
            for label in [m for m in labels if MODELS[m][0] == task]:
                kind = MODELS[label][1]
                if kind == "ours" and not ours:
                    skipped.append((name, label))
                    continue
                few = kind != "cheap" and task == "robust"
                for seed in range(args.gp_seeds if few else args.seeds):
                    print(f"{name} {label} seed {seed} ...", flush=True)
                    with threadpool_limits(limits=1), warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        if task == "counts":
                            split = count_split(name, seed, args.quick)
                            rec = fit_counts(label, *split, seed, args.svgp_maxiter)
                        else:
                            split = robust_split(name, seed, args.quick)
                            rec = fit_robust(label, *split, seed, args.svgp_maxiter)
                    rec.update(task=task, dataset=name, model=label, seed=seed,
                               n_train=int(split[0].shape[0]), n_test=int(split[-1].size),
                               date=f"{datetime.now(UTC):%Y-%m-%d %H:%M}")
                    print("   " + ", ".join(f"{k} {v:.4g}" for k, v in rec.items()
                                            if isinstance(v, float)), flush=True)
                    records.append(rec)
    return records, skipped


def summary(records, dataset, model, seeds=None):
    """Medians over the seeds (those in ``seeds`` if given) of a model's records, or None."""
    rows = [r for r in records if r["dataset"] == dataset and r["model"] == model
            and (seeds is None or r["seed"] in seeds)]
    if not rows:
        return None
    keys = [k for k, v in rows[0].items() if isinstance(v, (int, float)) and k != "seed"]
    out = {k: float(np.median([r[k] for r in rows])) for k in keys}
    out["seeds"] = sorted(r["seed"] for r in rows)
    return out


NOTES = (("alpha", "alpha {:.3g}"), ("iterations", "{:.0f} L-BFGS iterations"),
         ("scale", "scale {:.3f}"))


def _f(value, fmt):
    return "-" if value is None or not np.isfinite(value) else format(value, fmt)


def tables(records, skipped, args):
    """Markdown tables of the run: one per task."""
    lines = []
    for task in args.tasks:
        if task == "counts":
            lines += ["", "## Counts: mean Poisson deviance (lower is better) and LPD (mean "
                      + "log probability of the test count, higher is better)", "",
                      "| data | model | seeds | deviance | LPD | fit CPU s | notes |",
                      "|---|---|---|---|---|---|---|"]
        else:
            lines += ["", f"## Robust: {CORRUPT_SHARE:.0%} of the {TRAIN_ROWS} training "
                      + "targets shifted by 3-10 sd; test NMSE and NLPD on clean test rows", "",
                      "| data | model | targets | seeds | NMSE | NLPD | fit CPU s | notes |",
                      "|---|---|---|---|---|---|---|---|"]
        for name in DATASETS[task]:
            for label, (t, _, targets) in MODELS.items():
                if t != task:
                    continue
                if (name, label) in skipped:
                    mid = " | ".join(([targets] if task == "robust" else []) + ["-"] * 4)
                    lines.append(f"| {name} | {label} | {mid} | skipped: SparseGPRegressor "
                                 "has no `likelihood` parameter yet |")
                    continue
                s = summary(records, name, label)
                if s is None:
                    continue
                seeds = len(s["seeds"])
                note = [f"{s['clipped']:.0f} test means clipped at {CLIP:g}"
                        for _ in range(s.get("clipped", 0) > 0)]
                note += [text.format(s[k]) for k, text in NOTES if k in s]
                if task == "counts":
                    lines.append(f"| {name} | {label} | {seeds} | {s['deviance']:.4f} | "
                                 f"{_f(s['lpd'], '.4f')} | {s['fit_cpu']:.2f} | "
                                 f"{'; '.join(note)} |")
                else:
                    lines.append(f"| {name} | {label} | {targets} | {seeds} | {s['nmse']:.4f} | "
                                 f"{_f(s['nlpd'], '.3f')} | {s['fit_cpu']:.2f} | "
                                 f"{'; '.join(note)} |")
    return lines


def pair(records, dataset, a, b):
    """Medians of models ``a`` and ``b`` over the seeds both ran on, or (None, None)."""
    sa, sb = summary(records, dataset, a), summary(records, dataset, b)
    common = set(sa["seeds"]) & set(sb["seeds"]) if sa and sb else set()
    if not common:
        return None, None
    return summary(records, dataset, a, common), summary(records, dataset, b, common)


def _verdict(ok):
    return "**met**" if ok else "**not met**"


def goal_lines(records, skipped):
    """Issue 47's goals read off the run; what ours must reach while it is not measured."""
    lines = []
    for name in DATASETS["counts"]:
        ours = summary(records, name, "ours_poisson")
        for peer, text in (("hgb_poisson", "at or below HGB(loss=poisson)"),
                           ("poisson_glm", "below PoissonRegressor (alpha 1)"),
                           ("poisson_glm_cv", "below PoissonRegressor (alpha by CV)"),
                           ("gaussian_default", "against the Gaussian default")):
            if ours is None:
                s = summary(records, name, peer)
                if s and peer != "gaussian_default":
                    lines.append(f"- {name}, Poisson deviance {text}: ours must reach "
                                 f"<= {s['deviance']:.4f} (ours not measured)")
                continue
            a, b = pair(records, name, "ours_poisson", peer)
            if a is None:
                continue
            ok = a["deviance"] <= b["deviance"] if peer == "hgb_poisson" else \
                a["deviance"] < b["deviance"]
            lines.append(f"- {name}, Poisson deviance {text}: {a['deviance']:.4f} against "
                         f"{b['deviance']:.4f} (ratio {a['deviance'] / b['deviance']:.3f}); "
                         f"fit CPU {a['fit_cpu']:.1f} s against {b['fit_cpu']:.1f} s"
                         + ("" if peer == "gaussian_default" else f": {_verdict(ok)}"))
        lines += _svgp_goal(records, name, "ours_poisson", "svgp_poisson", "deviance", "lpd")
    for name in DATASETS["robust"]:
        clean = summary(records, name, "gaussian_clean")
        corrupt = summary(records, name, "gaussian_corrupt")
        if clean and corrupt and summary(records, name, "ours_student_t") is None:
            lines.append(f"- {name}: Student-t must reach NMSE <= {1.15 * clean['nmse']:.4f} on "
                         f"the corrupted targets and <= {1.05 * clean['nmse']:.4f} on the clean "
                         f"ones (1.15 and 1.05 x the clean Gaussian default's "
                         f"{clean['nmse']:.4f}), in <= {3 * corrupt['fit_cpu']:.1f} and "
                         f"{3 * clean['fit_cpu']:.1f} s CPU (3 x the Gaussian default's on the "
                         f"same targets; ours not measured)")
        for label, goal, text in (("ours_student_t", 1.15, "corrupted targets"),
                                  ("ours_student_t_clean", 1.05, "clean targets")):
            a, b = pair(records, name, label, "gaussian_clean")
            if a is None:
                continue
            ratio = a["nmse"] / b["nmse"]
            lines.append(f"- {name}, Student-t on {text}: NMSE {a['nmse']:.4f} against the clean "
                         f"Gaussian default's {b['nmse']:.4f} ({ratio - 1:+.1%}, goal within "
                         f"{goal - 1:.0%}): {_verdict(ratio <= goal)}")
        for label, ref in (("ours_student_t", "gaussian_corrupt"),
                           ("ours_student_t_clean", "gaussian_clean")):
            a, b = pair(records, name, label, ref)
            if a is not None:
                ratio = a["fit_cpu"] / b["fit_cpu"]
                lines.append(f"- {name}, fit CPU of `{label}` against `{ref}` on the same "
                             f"targets: {a['fit_cpu']:.1f} s / {b['fit_cpu']:.1f} s = "
                             f"{ratio:.2f}x (goal <= 3x): {_verdict(ratio <= 3)}")
        lines += _svgp_goal(records, name, "ours_student_t", "svgp_student_t", "nmse", "nlpd")
    return lines


def _svgp_goal(records, name, ours, svgp, metric, density):
    """Ours against GPflow's SVGP with the same likelihood: metric <= SVGP's at <= 1/5 CPU."""
    s = summary(records, name, svgp)
    if s is None:
        return []
    a, b = pair(records, name, ours, svgp)
    if a is None:
        return [(f"- {name}, against `{svgp}` ({metric} {s[metric]:.4f}, {density} "
                 f"{_f(s[density], '.4f')}, fit CPU {s['fit_cpu']:.1f} s): ours must reach "
                 f"{metric} <= {s[metric]:.4f} in <= {s['fit_cpu'] / 5:.1f} s CPU "
                 "(not measured)")]
    share = a["fit_cpu"] / b["fit_cpu"]
    ok = a[metric] <= b[metric] and share <= 0.2
    return [(f"- {name}, against `{svgp}`: {metric} {a[metric]:.4f} against "
             f"{b[metric]:.4f}, {density} {_f(a[density], '.4f')} against "
             f"{_f(b[density], '.4f')}; fit CPU {a['fit_cpu']:.1f} s = {share:.1%} of its "
             f"{b['fit_cpu']:.1f} s (goal: metric <= its at <= 1/5 of its CPU): {_verdict(ok)}")]


def plot(records, path):
    """Test metric against fit CPU, one panel per data set, each model its median point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = [(t, n) for t in DATASETS for n in DATASETS[t]
             if any(r["dataset"] == n for r in records)]
    if not names:
        return
    cols = min(2, len(names))
    rows = -(-len(names) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.0 * rows), squeeze=False)
    for ax, (task, name) in zip(axes.ravel(), names):
        metric = "deviance" if task == "counts" else "nmse"
        for label in MODELS:
            s = summary(records, name, label)
            if s is None:
                continue
            marker = "*" if label.startswith("ours") else "o" if "gaussian" in label else "s"
            ax.scatter(s["fit_cpu"], s[metric], marker=marker, s=80 if marker == "*" else 40)
            ax.annotate(label, (s["fit_cpu"], s[metric]), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("log")
        if task == "robust":
            ax.set_yscale("log")
        ax.set_xlabel("fit CPU s (one thread)")
        ax.set_ylabel("mean Poisson deviance" if task == "counts" else "test NMSE")
        ax.set_title(f"{name} (medians over seeds; lower left is better)", fontsize=9)
        ax.margins(0.15)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", nargs="+", choices=list(DATASETS), default=list(DATASETS))
    parser.add_argument("--models", help=f"comma-separated labels (default all: {list(MODELS)})")
    parser.add_argument("--seeds", type=int, default=3,
                        help="seeds (splits) of the count sets and of the cheap robust models")
    parser.add_argument("--gp-seeds", type=int, default=1,
                        help="seeds of the GP models on the robust sets")
    parser.add_argument("--svgp-maxiter", type=int, default=1000,
                        help="L-BFGS iterations of GPflow's SVGP and SGPR")
    parser.add_argument("--tag", default="likelihoods",
                        help="results/<tag>.md, _runs.json and .png (a run of one task apart)")
    parser.add_argument("--quick", action="store_true",
                        help="800 training rows, one seed, 200 L-BFGS steps; nothing saved")
    args = parser.parse_args(argv)
    if args.models:
        unknown = set(args.models.split(",")) - set(MODELS)
        if unknown:
            raise SystemExit(f"unknown models {sorted(unknown)}; known: {list(MODELS)}")
    if args.quick:
        args.seeds, args.gp_seeds, args.svgp_maxiter = 1, 1, 200
    started = f"{datetime.now(UTC):%Y-%m-%d %H:%M}"
    records, skipped = run(args)
    lines = [
        "# Student-t and Poisson likelihoods against their peers (issue 47)",
        "",
        (f"{machine()}; numpy {np.__version__}, scikit-learn {sklearn.__version__}; one thread "
         f"for every model; CPU = process time; figures are medians over the seeds. "
         f"`python benchmarks/peers/likelihoods.py {' '.join(argv or sys.argv[1:])}` "
         f"({started} - {datetime.now(UTC):%H:%M} UTC, skgpsparse {skgpsparse.__version__})"),
        *tables(records, skipped, args),
    ]
    goals = goal_lines(records, skipped)
    if goals:
        lines += ["", "## Issue 47's goals in this run", "", *goals]
    print("\n".join(lines))
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        (RESULTS / f"{args.tag}.md").write_text("\n".join(lines) + "\n")
        (RESULTS / f"{args.tag}_runs.json").write_text(json.dumps(records, indent=1))
        plot(records, RESULTS / f"{args.tag}.png")


if __name__ == "__main__":
    main()
