"""Many classes: how the shared fit's one-vs-rest probabilities combine (issue 49).

For each multi-class PMLB set and seed (the split of ``multiclass.py``: a seeded permutation's
first ``n_train`` rows, the next ones up to 5,000 for the test, features standardised on the
training rows), one process fits:

- ``default``: ``SparseGPClassifier(random_state=0)`` (the shared fit, whose class
  probabilities are ``softmax(log p_k - t log(1 - p_k))`` with ``t = logit_weight_`` chosen by
  the training rows' leave-one-out log loss); the test NLP at the chosen ``t``, and of the
  same fitted binary models at ``t = 0`` (the normalisation ``p_k / sum_j p_j``, the default
  before this change), at ``t = 1`` and at the best ``t`` on the test rows (an oracle, for
  reference only); ``choose s`` is the CPU of choosing ``t`` (the leave-one-out pass), inside
  the fit's CPU;
- ``independent``: ``multi_class="independent"`` (a whole binary fit per class, normalised as
  scikit-learn's one-vs-rest), the issue's target;
- ``binary``: the default fit of the first class against the rest (the CPU unit of the goal);
- ``hgb``: ``HistGradientBoostingClassifier(random_state=0)``.

Test NLP is ``-mean log p(y_true | x)``. One thread of BLAS; CPU is process time. Results:
``benchmarks/studies/results/multiclass_combination.md`` (a table per run, medians over seeds).

Usage::

    python benchmarks/studies/multiclass_combination.py --seeds 0,1,2
    python benchmarks/studies/multiclass_combination.py --sets pmlb_letter:5000 --seeds 0
"""

import argparse
import os
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _common.data import load_dataset  # noqa: E402
from multiclass import split  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "multiclass_combination.md"
SETS = ("pmlb_letter:5000,pmlb_pendigits:2000,pmlb_splice_subst_splice:1000,pmlb_sleep:2000,"
        "pmlb_connect_4:2000,pmlb_new_thyroid_subst_thyroid:150")


def _nlp(log_proba, y_index):
    return float(-np.mean(log_proba[np.arange(y_index.size), y_index]))


def run(name, n_train, seed, fits):
    from sklearn.ensemble import HistGradientBoostingClassifier

    from skgpsparse import SparseGPClassifier
    from skgpsparse.classification.multiclass import _combination

    n_rows = load_dataset(name)["X"].shape[0]
    X, y, X_test, y_test = split(name, n_train, min(5000, n_rows - n_train), seed)
    out = {"data": name, "seed": seed, "n_train": n_train, "n_test": y_test.size,
           "classes": np.unique(y).size}
    choose = _combination.choose_logit_weight
    spent = []

    def timed_choose(*args, **kwargs):
        start = time.process_time()
        result = choose(*args, **kwargs)
        spent.append(time.process_time() - start)
        return result

    for fit in fits:
        yf, yf_test = y, y_test
        if fit == "binary":
            first = np.unique(y)[0]
            yf, yf_test = (y == first).astype(int), (y_test == first).astype(int)
        model = (HistGradientBoostingClassifier(random_state=0) if fit == "hgb"
                 else SparseGPClassifier(random_state=0, multi_class=(
                     "independent" if fit == "independent" else "auto")))
        _combination.choose_logit_weight = timed_choose
        cpu = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X, yf)
        cpu = time.process_time() - cpu
        _combination.choose_logit_weight = choose
        index = np.searchsorted(model.classes_, yf_test)
        out[f"{fit}_cpu"] = cpu
        if fit != "default":
            out[f"{fit}_nlp"] = _nlp(np.log(np.clip(model.predict_proba(X_test), 1e-300, None)),
                                     index)
            continue
        out["t"] = model.logit_weight_
        out["choose_s"] = sum(spent)
        moments = [p.latent_mean_and_variance(X_test) for p in model._predictors]
        log_p = np.column_stack([p.likelihood.log_predictive(1.0, m, v)
                                 for p, (m, v) in zip(model._predictors, moments)])
        log_q = np.column_stack([p.likelihood.log_predictive(-1.0, m, v)
                                 for p, (m, v) in zip(model._predictors, moments)])
        at = {t: _nlp(_combination.combined_log_proba(log_p, log_q, t), index)
              for t in np.round(np.linspace(0, 1, 21), 2)}
        out["default_nlp"] = _nlp(model.predict_log_proba(X_test), index)
        out["nlp_t0"], out["nlp_t1"] = at[0.0], at[1.0]
        best = min(at, key=at.get)
        out["oracle_t"], out["oracle_nlp"] = best, at[best]
        out["accuracy"] = float(np.mean(model.predict(X_test) == y_test))
    print(out, flush=True)
    return out


def table(rows):
    head = ("| data | seed | classes | n train | t chosen | test NLP t=0 (before) | chosen t | "
            "t=1 | oracle t (NLP) | independent | HGB | accuracy | CPU default (s) | choose t (s) "
            "| CPU independent (s) | default / binary CPU |")
    lines = [head, "|" + "---|" * (head.count("|") - 1)]

    def f(r, key, fmt="{:.4f}"):
        return fmt.format(r[key]) if key in r else ""

    for r in rows:
        ratio = (f"{r['default_cpu'] / r['binary_cpu']:.2f}" if "binary_cpu" in r else "")
        lines.append(
            f"| {r['data']} | {r['seed']} | {r['classes']} | {r['n_train']} | {r['t']:.3f} | "
            f"{r['nlp_t0']:.4f} | {r['default_nlp']:.4f} | {r['nlp_t1']:.4f} | "
            f"{r['oracle_t']:.2f} ({r['oracle_nlp']:.4f}) | {f(r, 'independent_nlp')} | "
            f"{f(r, 'hgb_nlp')} | {r['accuracy']:.4f} | {r['default_cpu']:.1f} | "
            f"{r['choose_s']:.2f} | {f(r, 'independent_cpu', '{:.1f}')} | {ratio} |"
        )
    return lines


def medians(rows):
    lines = ["| data | seeds | test NLP t=0 (before) | chosen t | independent | chosen - "
             "independent | HGB |", "|---|---|---|---|---|---|---|"]
    for name in dict.fromkeys(r["data"] for r in rows):
        rs = [r for r in rows if r["data"] == name]

        def med(key):
            vals = [r[key] for r in rs if key in r]
            return float(np.median(vals)) if vals else float("nan")

        gap = [r["default_nlp"] - r["independent_nlp"] for r in rs if "independent_nlp" in r]
        lines.append(
            f"| {name} | {len(rs)} | {med('nlp_t0'):.4f} | {med('default_nlp'):.4f} | "
            f"{med('independent_nlp'):.4f} | "
            f"{np.median(gap) if gap else float('nan'):+.4f} (range {min(gap, default=0):+.4f}"
            f" .. {max(gap, default=0):+.4f}) | {med('hgb_nlp'):.4f} |"
        )
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=SETS, help="name:n_train, comma separated")
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--fits", default="default,independent,binary,hgb")
    args = parser.parse_args(argv)
    rows = []
    for seed in (int(s) for s in args.seeds.split(",")):
        for item in args.sets.split(","):
            name, n_train = item.split(":")
            rows.append(run(name, int(n_train), seed, args.fits.split(",")))
    rows.sort(key=lambda r: (r["data"], r["seed"]))
    text = [f"\n## Run of {datetime.now(UTC):%Y-%m-%d %H:%M} UTC (seeds {args.seeds})", "",
            *table(rows), "", "Medians over the seeds:", "", *medians(rows), ""]
    RESULTS.parent.mkdir(exist_ok=True)
    if not RESULTS.exists():
        RESULTS.write_text("# Many classes: combining the one-vs-rest probabilities\n\n"
                           "`python benchmarks/studies/multiclass_combination.py` (see its "
                           "docstring for the fits and columns).\n")
    with RESULTS.open("a") as out:
        out.write("\n".join(text) + "\n")
    print("\n".join(text))


if __name__ == "__main__":
    main()
