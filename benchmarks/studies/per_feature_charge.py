"""The per-feature trial's charge: when one length scale per feature is kept (issues 47, 49).

The default kernel of the EP-fitted models (the classifier, and the regressor with
``likelihood="poisson"`` or ``"student_t"``) is fitted with one length scale, then with one
per feature; the per-feature kernel is kept when its log evidence and hyperprior rise by more
than a charge, today the BIC's ``(d - 1) / 2 log n`` nats
(``skgpsparse/latent/learning/_ep_rounds.py``, ``_per_feature_choice``). On pmlb connect-4
(the shared multi-class fit) and the count set doctorvisits a per-feature kernel passed by
hand lowers the test metric far below the default's, where the trial's gain falls short of
that charge (``results/multiclass_combination.md``, session 30). This study fits the
default constructor with the charge multiplied by ``factor`` (1 = today; 0 = the evidence and
the hyperprior alone) on:

- the Raetsch sets where the charge was set (breast cancer, heart, waveform: 200-400 rows, on
  which per-feature length scales made the test NLP worse) and german, image, titanic, and
  diabetis (pmlb pima), their own splits 1-5;
- pmlb magic and twonorm (5,000 training rows, seed 0's permutation, 5,000 / 2,400 test);
- pmlb connect-4 (3 classes, 2,000 training rows, 5,000 test; the split of ``multiclass.py``),
  seeds 0-2;
- the count sets doctorvisits and nmes1988 (``likelihood="poisson"``; the 75 / 25 splits of
  ``benchmarks/peers/likelihoods.py``), seeds 0-2: mean Poisson deviance.

Each fit: one BLAS thread, ``random_state`` the seed (the realization for Raetsch), CPU in
process seconds; ``ard`` says whether the fitted kernel has one length scale per feature.
Records append to ``results/per_feature_charge_runs.jsonl``; the report
(``results/per_feature_charge.md``) gives per set and factor the mean test metric, its
spread, how many fits kept per-feature length scales and the median CPU.

Usage::

    python benchmarks/studies/per_feature_charge.py --factors 1,0.5,0.25,0
    python benchmarks/studies/per_feature_charge.py --sets heart connect_4 --factors 1,0.25
    python benchmarks/studies/per_feature_charge.py --report
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parent / "peers"))

from _common.data import load_dataset  # noqa: E402
from _common.machine import machine  # noqa: E402

RUNS = HERE / "results" / "per_feature_charge_runs.jsonl"
REPORT = HERE / "results" / "per_feature_charge.md"
RAETSCH = ("breast_cancer", "heart", "waveform", "german", "image", "titanic")
SETS = (*RAETSCH, "diabetis", "magic", "twonorm", "connect_4", "doctorvisits", "nmes1988")


def _standardised(X, train, test):
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return (X[train] - mean) / std, (X[test] - mean) / std


def splits(name):
    """``(seed, X, y, X_test, y_test, task)`` of every split of the set ``name``."""
    if name in RAETSCH or name == "diabetis":
        data = load_dataset("pmlb_pima_subst_diabetis" if name == "diabetis"
                            else f"raetsch_{name}")
        for r in range(1, 6):
            row = r - 1 if name == "diabetis" else int(
                np.flatnonzero(data["realization"] == r)[0])
            train, test = data["train_idx"][row], data["test_idx"][row]
            X, X_test = _standardised(np.asarray(data["X"], float), train, test)
            yield r, X, data["y"][train], X_test, data["y"][test], "binary"
    elif name in ("magic", "twonorm", "connect_4"):
        from multiclass import split

        file, n_train, n_test = {
            "magic": ("pmlb_magic", 5000, 5000),
            "twonorm": ("pmlb_twonorm_subst_twonorm", 5000, 2400),
            "connect_4": ("pmlb_connect_4", 2000, 5000),
        }[name]
        seeds = range(3) if name == "connect_4" else range(1)
        for seed in seeds:
            yield (seed, *split(file, n_train, n_test, seed),
                   "multiclass" if name == "connect_4" else "binary")
    else:
        from likelihoods import count_split

        for seed in range(3):
            yield (seed, *count_split(name, seed), "counts")


def fit(name, factor, seed, X, y, X_test, y_test, task):
    """One default fit with the charge times ``factor``: its record."""
    from sklearn.metrics import mean_poisson_deviance

    from skgpsparse import SparseGPClassifier, SparseGPRegressor
    from skgpsparse.kernels._scales import bic_charge, per_feature_length_scale_positions
    from skgpsparse.latent.learning import _ep_rounds

    _ep_rounds.bic_charge = lambda n_extra, n: factor * bic_charge(n_extra, n)
    if task == "counts":
        model = SparseGPRegressor(likelihood="poisson", random_state=seed)
    else:
        model = SparseGPClassifier(random_state=seed)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tic = time.process_time()
        model.fit(X, y)
        cpu = time.process_time() - tic
    if task == "counts":
        metric = float(mean_poisson_deviance(y_test, model.predict(X_test)))
        kernels = [model.kernel_]
    else:
        log_p = model.predict_log_proba(X_test)
        idx = np.searchsorted(model.classes_, y_test)
        metric = float(-np.mean(log_p[np.arange(y_test.size), idx]))
        kernels = getattr(model, "kernels_", [model.kernel_])
    ard = any(per_feature_length_scale_positions(k) for k in kernels)
    return {"set": name, "factor": factor, "seed": seed, "metric": metric,
            "metric_name": "deviance" if task == "counts" else "NLP", "cpu": cpu,
            "ard": bool(ard), "n_train": int(len(y)), "kernel": str(kernels[0])[:200]}


def report():
    runs = [json.loads(line) for line in RUNS.read_text().splitlines() if line.strip()]
    last = {}
    for r in runs:
        last[(r["set"], r["factor"], r["seed"])] = r
    lines = ["# The per-feature trial's charge", "",
             f"`python benchmarks/studies/per_feature_charge.py` (module docstring). {machine()}; "
             "one BLAS thread. Per set and charge factor (x the BIC's (d - 1) / 2 log n; 1 = "
             "today's default): the mean test metric over the splits (NLP; mean Poisson "
             "deviance for the count sets) with its range, the change against factor 1 "
             "(mean of the paired differences), how many fits kept one length scale per "
             "feature, and the median fit CPU.", "",
             "| set | metric | splits | factor | mean | range | vs factor 1 | per-feature kept "
             "| CPU s |", "|---|---|---|---|---|---|---|---|---|"]
    for name in SETS:
        factors = sorted({f for (s, f, _) in last if s == name}, reverse=True)
        for factor in factors:
            rows = [r for (s, f, _), r in sorted(last.items()) if s == name and f == factor]
            base = {r["seed"]: r for (s, f, _), r in last.items() if s == name and f == 1.0}
            v = np.array([r["metric"] for r in rows])
            paired = [r["metric"] - base[r["seed"]]["metric"] for r in rows if r["seed"] in base]
            lines.append(
                f"| {name} | {rows[0]['metric_name']} | {len(rows)} | {factor:g} | "
                f"{v.mean():.4f} | {v.min():.4f} .. {v.max():.4f} | "
                f"{np.mean(paired):+.4f} | {sum(r['ard'] for r in rows)} of {len(rows)} | "
                f"{np.median([r['cpu'] for r in rows]):.1f} |")
    # the hand-written reading after the table stays
    old = REPORT.read_text() if REPORT.exists() else ""
    tail = old[old.find("\n## Reading"):] if "\n## Reading" in old else ""
    REPORT.write_text("\n".join(lines) + "\n" + tail)
    print("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS), choices=list(SETS))
    parser.add_argument("--factors", default="1,0.5,0.25,0")
    parser.add_argument("--report", action="store_true", help="only write the report")
    args = parser.parse_args(argv)
    if not args.report:
        factors = [float(f) for f in args.factors.split(",")]
        for name in args.sets:
            for seed, X, y, X_test, y_test, task in splits(name):
                for factor in factors:
                    r = fit(name, factor, seed, X, y, X_test, y_test, task)
                    print(json.dumps(r), flush=True)
                    with RUNS.open("a") as fh:
                        fh.write(json.dumps(r) + "\n")
    report()


if __name__ == "__main__":
    main()
