"""What the shared multi-class learning costs, and what a cheaper learning would cost in test NLP.

Issue 49's goal for many classes: the default multi-class fit at <= 3x one binary default fit's
CPU on pmlb letter (26 classes, 5,000 rows, one BLAS thread). The shared learning (one kernel
and the classes' biases on a class-stratified subsample, ``_shared_learning.py``) is most of
that fit. This study fits, on the splits of ``multiclass.py`` (first ``n_train`` rows, the next
up to 5,000 for the test, features standardised on the training rows), the default classifier
(``SparseGPClassifier(random_state=0)``, one BLAS thread) with the shared learning's constants
as they are (``default``) and changed (variants that change the model):

- ``tol<x>``: EP's tolerance while L-BFGS searches (``_SEARCH_TOL``, 1e-3);
- ``rows<m>``: the learning subsample's floor (``LEARN_ROWS``, 1,000);

joined with ``+``; and, on letter, the binary default fit of class 0 against the rest
(``binary``), the reference of the goal. It prints one JSON line per fit and writes the table
and the medians over the seeds to ``results/multiclass_learning_cost.md``. Each fit runs in a
fresh process (the constants are module attributes).

Usage::

    python benchmarks/studies/multiclass_learning_cost.py --seeds 0,1
    python benchmarks/studies/multiclass_learning_cost.py --sets pmlb_letter:5000 \\
        --variants default,tol1e-2 --seeds 0
"""

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE.parents[1]))

from _common.children import fits_in_children  # noqa: E402

RESULTS = HERE / "results" / "multiclass_learning_cost.md"
SETS = ("pmlb_letter:5000,pmlb_pendigits:2000,pmlb_splice_subst_splice:1000,pmlb_sleep:2000,"
        "pmlb_connect_4:2000")
VARIANTS = "default,tol1e-2,rows500"


def fit_one(name, n_train, variant, seed):
    """One fit in this process: a JSON line with its CPU and test NLP."""
    from _common.data import load_dataset
    from multiclass import split
    from threadpoolctl import threadpool_limits

    import skgpsparse.classification.multiclass._shared_learning as shared

    for part in variant.split("+"):
        if part.startswith("tol"):
            shared._SEARCH_TOL = float(part[3:])
        elif part.startswith("rows"):
            shared.LEARN_ROWS = int(part[4:])
        elif part not in ("default", "binary"):
            raise ValueError(f"unknown variant part {part!r}")
    from skgpsparse import SparseGPClassifier

    n_rows = load_dataset(name)["X"].shape[0]
    X, y, X_test, y_test = split(name, n_train, min(5000, n_rows - n_train), seed)
    if variant == "binary":  # class 0 against the rest
        first = np.unique(y)[0]
        y, y_test = (y == first).astype(int), (y_test == first).astype(int)
    with threadpool_limits(1):
        model = SparseGPClassifier(random_state=0)
        start = time.process_time()
        model.fit(X, y)
        cpu = time.process_time() - start
        log_proba = model.predict_log_proba(X_test)
    index = np.searchsorted(model.classes_, y_test)
    nlp = float(-np.mean(log_proba[np.arange(index.size), index]))
    return {"data": name, "variant": variant, "seed": seed, "classes": int(np.unique(y).size),
            "n_train": n_train, "cpu": round(cpu, 2), "nlp": round(nlp, 4)}


def _median_rows(rows):
    lines = ["| data | variant | fits | CPU (s) | test NLP | CPU / default | NLP - default |",
             "|---|---|---|---|---|---|---|"]
    for name in dict.fromkeys(r["data"] for r in rows):
        of_set = [r for r in rows if r["data"] == name]
        base = [r for r in of_set if r["variant"] == "default"]
        for variant in dict.fromkeys(r["variant"] for r in of_set):
            rs = [r for r in of_set if r["variant"] == variant]
            cpu, nlp = np.median([r["cpu"] for r in rs]), np.median([r["nlp"] for r in rs])
            ratio = diff = ""
            if base and variant != "binary":
                ratio = f"{cpu / np.median([r['cpu'] for r in base]):.2f}"
                seeds = {r["seed"]: r["nlp"] for r in base}
                diff = f"{np.median([r['nlp'] - seeds[r['seed']] for r in rs]):+.4f}"
            lines.append(f"| {name} | {variant} | {len(rs)} | {cpu:.2f} | {nlp:.4f} | {ratio} "
                         f"| {diff} |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=SETS, help="name:n_train, comma separated")
    parser.add_argument("--variants", default=VARIANTS)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--one", nargs=4, metavar=("NAME", "N_TRAIN", "VARIANT", "SEED"),
                        help=argparse.SUPPRESS)  # a single fit (the child process)
    args = parser.parse_args()
    if args.one:
        name, n_train, variant, seed = args.one
        print(json.dumps(fit_one(name, int(n_train), variant, int(seed))), flush=True)
        return
    variants = args.variants.split(",")
    rows = fits_in_children(__file__, args.seeds, args.sets,
                            lambda name: ["binary", *variants] if name == "pmlb_letter"
                            else variants)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=HERE).stdout.strip()
    table = ["| data | variant | classes | n train | seed | CPU (s) | test NLP |",
             "|---|---|---|---|---|---|---|"]
    table += [f"| {r['data']} | {r['variant']} | {r['classes']} | {r['n_train']} | {r['seed']} "
              f"| {r['cpu']:.2f} | {r['nlp']:.4f} |" for r in rows]
    RESULTS.write_text("\n".join([
        "# The shared multi-class learning's cost, and cheaper learnings' test NLP", "",
        f"`python benchmarks/studies/multiclass_learning_cost.py --seeds {args.seeds}` "
        f"(commit {commit}, {time.strftime('%Y-%m-%d %H:%M')}; one BLAS thread; CPU is the "
        "process time of the whole fit, on a machine shared with other sessions).", "",
        *table, "", "Medians over the seeds:", "", *_median_rows(rows), "",
    ]))


if __name__ == "__main__":
    main()
