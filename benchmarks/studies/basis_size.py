"""Basis size against accuracy and cost: what a stopping rule for ``max_basis="auto"`` would see.

For each regression set, the default ``SparseGPRegressor`` (one thread, ``random_state=0``) is
fitted with ``max_basis`` in ``--sizes``; the table gives test NMSE, NLPD (with the noise),
mean ``z^2`` and the fit's CPU (process) seconds. Beside it, the curve that a stopping rule
sees during forward selection: Titsias' bound per training row, ``F(p) / n``, after each
doubling of the basis (25, 50, ..., up to ``--curve-max``), with the hyperparameters fixed at
the fit's start (the exact GP on a random subset of 100 rows: what the fit knows before
selecting), and, for comparison, at the hyperparameters the default ``max_basis=100`` fit
learned. The column ``gain`` is ``(F(2p) - F(p)) / n``, the per-row gain of the doubling that
ends at that size. With ``--auto`` the table also has the ``max_basis="auto"`` fit.

Inputs and targets are standardised on the training rows. kin40k, pol and pumadyn32nm
use their own first split (10,000, 10,000 and 7,168 training rows); uci_protein a random
10,000 training and 10,000 test rows (seed 0): 10,000 rather than 40,000 rows so that the
fits at 800 stay within minutes of CPU on a shared machine.

Usage::

    python benchmarks/studies/basis_size.py --sets kin40k --sizes 50 100 200
    python benchmarks/studies/basis_size.py --auto
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common.data import load_dataset  # noqa: E402
from _common.machine import machine  # noqa: E402
from _common.peers import fit_and_score, standardise  # noqa: E402
from _common.report import write_keeping_findings  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"
SETS = ("kin40k", "uci_protein", "pol", "pumadyn32nm")
SIZES = (50, 100, 200, 400, 800)


def split(name, n_train=10000, n_test=10000, seed=0):
    """Standardised training and test rows of one set (see the module docstring)."""
    d = load_dataset(name)
    X, y = d["X"].astype(float), d["y"].astype(float).ravel()
    if "train_idx" in d.files:
        tr, te = d["train_idx"][0], d["test_idx"][0]
    else:
        idx = np.random.RandomState(seed).permutation(len(y))[: n_train + n_test]
        tr, te = idx[:n_train], idx[n_train:]
    X_train, X_test, y_train, y_test = standardise(X[tr], X[te], y[tr], y[te])
    keep = X_train.std(axis=0) > 0
    return X_train[:, keep], y_train, X_test[:, keep], y_test


def bound_curve(kernel, s2, X, y, p_max, seed=0):
    """Titsias' bound per row after each doubling of a forward selection at fixed hyperparameters."""
    from skgpsparse.regression._basis import forward_step, make_selector
    from skgpsparse.regression._state import RegressionState
    from skgpsparse.regression._vfe import state_objective

    state = RegressionState(kernel, X, y, s2, p_max)
    selector, rng = make_selector("matching_pursuit", None), np.random.RandomState(seed)
    curve, size, cpu = {}, 25, time.process_time()
    while size <= p_max:
        while state.n_basis < size and forward_step(state, selector, rng, []):
            pass
        curve[size] = state_objective(state, "vfe") / len(y)
        size *= 2
    return curve, time.process_time() - cpu


def start_hyperparameters(X, y):
    """The fit's starting hyperparameters: ``max_iter=0`` keeps the subset start's."""
    from skgpsparse import SparseGPRegressor

    model = SparseGPRegressor(max_iter=0, refine_basis=0, noise_calibration=None, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    return model


def main(argv=None):
    from threadpoolctl import threadpool_limits

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    parser.add_argument("--sizes", nargs="*", type=int, default=list(SIZES))
    parser.add_argument("--curve-max", type=int, default=1600)
    parser.add_argument("--auto", action="store_true", help="also fit max_basis='auto'")
    parser.add_argument("--no-curve", action="store_true", help="skip the bound curves")
    parser.add_argument("--out", default="basis_size")
    args = parser.parse_args(argv)
    RESULTS.mkdir(exist_ok=True)
    runs = RESULTS / f"{args.out}_runs.jsonl"
    for name in args.sets:
        X, y, X_test, y_test = split(name)
        configs = [(p, {"max_basis": p}) for p in args.sizes]
        if args.auto:
            configs.append(("auto", {"max_basis": "auto"}))
        _fits(name, configs, X, y, X_test, y_test, runs, not args.no_curve, args.curve_max)
        if args.no_curve:
            continue
        with threadpool_limits(limits=1):
            start = start_hyperparameters(X, y)
            s_curve, s_cpu = bound_curve(start.kernel_, start.noise_variance_, X, y,
                                         min(args.curve_max, len(y)))
        rec = {"set": name, "kind": "curve_start", "curve": s_curve, "cpu": s_cpu,
               "kernel": str(start.kernel_), "noise": float(start.noise_variance_)}
        print(json.dumps(rec), flush=True)
        with runs.open("a") as f:
            f.write(json.dumps(rec) + "\n")
    report(runs, RESULTS / f"{args.out}.md")


def _fits(name, configs, X, y, X_test, y_test, runs, curve, curve_max):
    """Fit and score each configuration; append the records to ``runs``."""
    from threadpoolctl import threadpool_limits

    from skgpsparse import SparseGPRegressor

    for label, config in configs:
        model = SparseGPRegressor(random_state=0, **config)
        r = fit_and_score(model, X, y, X_test, y_test)
        r.update(set=name, kind="fit", max_basis=label, n_basis=len(model.basis_indices_),
                 cpu=r.pop("fit_cpu"), bound=model.log_marginal_likelihood_value_ / len(y))
        if getattr(model, "basis_size_curve_", None) is not None:
            r["size_curve"] = model.basis_size_curve_.tolist()
        if label == 100 and curve:
            with threadpool_limits(limits=1):
                r["curve_learned"], _ = bound_curve(
                    model.kernel_, model.noise_variance_, X, y, min(curve_max, len(y)))
        print(json.dumps(r), flush=True)
        with runs.open("a") as f:
            f.write(json.dumps(r) + "\n")


def report(runs, path):
    """The markdown tables (and a plot) from the runs file."""
    recs = [json.loads(line) for line in runs.read_text().splitlines() if line.strip()]
    lines = [
        "# Basis size: accuracy, cost and the bound a stopping rule sees",
        "",
        (f"{machine()}; one thread; CPU = process time of the fit. "
         "`python benchmarks/studies/basis_size.py` (module docstring: the protocol)."),
        "",
        "## Fixed sizes (and `auto`)",
        "",
        "| data | max_basis | basis | NMSE | NLPD | mean z^2 | fit CPU s | bound / n |",
        "|---|---|---|---|---|---|---|---|",
    ]
    fits = sorted((r for r in recs if r["kind"] == "fit"),
                  key=lambda r: (r["set"], r["max_basis"] == "auto", r["n_basis"]))
    for r in fits:
        lines.append(
            f"| {r['set']} | {r['max_basis']} | {r['n_basis']} | {r['nmse']:.4f} | "
            f"{r['nlpd']:.4f} | {r['z2']:.2f} | {r['cpu']:.1f} | {r['bound']:.4f} |"
        )
    lines += ["", "## `auto` against the best fixed size and today's default (100)", "",
              ("| data | auto size | NLPD auto - best fixed (size) | auto CPU / best's | "
               "NLPD auto - default |"), "|---|---|---|---|---|"]
    for name in sorted({r["set"] for r in fits}):
        fixed = [r for r in fits if r["set"] == name and r["max_basis"] != "auto"]
        auto = [r for r in fits if r["set"] == name and r["max_basis"] == "auto"]
        default = [r for r in fixed if r["max_basis"] == 100]
        if not (fixed and auto and default):
            continue
        best, a = min(fixed, key=lambda r: r["nlpd"]), auto[-1]
        lines.append(
            f"| {name} | {a['n_basis']} | {a['nlpd'] - best['nlpd']:+.4f} ({best['max_basis']}) "
            f"| {a['cpu'] / best['cpu']:.2f} | {a['nlpd'] - default[-1]['nlpd']:+.4f} |"
        )
    lines += ["", "## What `auto` saw: the profiled bound per row after each doubling", "",
              "| data | p | profiled bound / n | gain |", "|---|---|---|---|"]
    for r in fits:
        prev = None
        for p, v in r.get("size_curve", []):
            gain = "" if prev is None else f"{v - prev:.4f}"
            lines.append(f"| {r['set']} | {int(p)} | {v:.4f} | {gain} |")
            prev = v
    lines += [
        "",
        "## The bound per row during one forward selection (fixed hyperparameters)",
        "",
        ("`start`: at the fit's starting hyperparameters; `learned`: at those the default "
         "`max_basis=100` fit learned. gain: `(F(p) - F(p/2)) / n`."),
        "",
        "| data | hyperparameters | p | F(p) / n | gain |",
        "|---|---|---|---|---|",
    ]
    curves = [(r["set"], "start", r["curve"]) for r in recs if r["kind"] == "curve_start"]
    curves += [(r["set"], "learned", r["curve_learned"]) for r in fits if "curve_learned" in r]
    for name, which, curve in sorted(curves, key=lambda c: (c[0], c[1])):
        prev = None
        for p, v in curve.items():
            gain = "" if prev is None else f"{v - prev:.4f}"
            lines.append(f"| {name} | {which} | {p} | {v:.4f} | {gain} |")
            prev = v
    write_keeping_findings(path, "\n".join(lines))
    _plot(fits, path.with_suffix(".png"))



def _plot(fits, path):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:  # the tables are the result; the plot is a convenience
        return
    names = sorted({r["set"] for r in fits})
    fig, axes = plt.subplots(1, len(names), figsize=(4 * len(names), 3.2), squeeze=False)
    for ax, name in zip(axes[0], names):
        rows = [r for r in fits if r["set"] == name and r["max_basis"] != "auto"]
        rows.sort(key=lambda r: r["n_basis"])
        ax.plot([r["n_basis"] for r in rows], [r["nlpd"] for r in rows], "o-", label="fixed")
        for r in fits:
            if r["set"] == name and r["max_basis"] == "auto":
                ax.plot(r["n_basis"], r["nlpd"], "r*", ms=12, label=f"auto ({r['cpu']:.0f} s)")
        for r in rows:
            ax.annotate(f"{r['cpu']:.0f} s", (r["n_basis"], r["nlpd"]), fontsize=7)
        ax.set_xscale("log")
        ax.set_xticks(SIZES, [str(p) for p in SIZES])
        ax.minorticks_off()
        ax.set_xlabel("basis size")
        ax.set_ylabel("test NLPD")
        ax.set_title(name)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=100)


if __name__ == "__main__":
    main()
