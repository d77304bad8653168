"""Many classes: the shared one-vs-rest fit against the independent one, and one binary fit.

On a multi-class PMLB set (default ``pmlb_letter``, 26 classes, 16 features), a seeded split
of ``--n-train`` training rows (default 5,000) and ``--n-test`` test rows (default 5,000),
features standardised on the training rows. Fits, each timed (wall and CPU, one process):

- ``shared``: ``SparseGPClassifier(random_state=0, multi_class="shared")``;
- ``independent``: the same with ``multi_class="independent"`` (a whole binary fit per class,
  the default before session 20);
- ``default``: ``SparseGPClassifier(random_state=0)`` (since session 20 ``multi_class="auto"``,
  the shared fit above two classes);
- ``binary``: the default constructor on the same rows, labels "first class" against the rest
  (the unit of the issue's goal: the shared fit at most 3x its time);
- ``hgb``: scikit-learn's ``HistGradientBoostingClassifier(random_state=0)``, for reference.

Test NLP is ``-mean log p(y_true | x)`` (natural log), accuracy the share of argmax hits (the
binary fit's on its own two-class labels). Every fit appends one JSON line to
``benchmarks/studies/results/multiclass_runs.jsonl`` (so fits may run as separate processes; a
row's ``note`` says when it came from another driver of the same split and fit); ``--report``
writes ``benchmarks/studies/results/multiclass.md`` from those lines.

Usage::

    python benchmarks/studies/multiclass.py --fits binary,shared,independent,hgb
    python benchmarks/studies/multiclass.py --data pmlb_pendigits --fits shared,independent
    python benchmarks/studies/multiclass.py --fits binary,shared --repeats 3  # interleaved
    python benchmarks/studies/multiclass.py --report
"""

import argparse
import json
import subprocess
import sys
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _common.data import load_dataset

RESULTS = Path(__file__).resolve().parent / "results"
RUNS = RESULTS / "multiclass_runs.jsonl"


def split(name, n_train, n_test, seed):
    """Standardised ``(X_train, y_train, X_test, y_test)``: a seeded permutation's first rows."""
    data = load_dataset(name)
    X, y = np.asarray(data["X"], dtype=float), np.asarray(data["y"])
    perm = np.random.default_rng(seed).permutation(X.shape[0])
    train, test = perm[:n_train], perm[n_train : n_train + n_test]
    mean, std = X[train].mean(axis=0), X[train].std(axis=0)
    std = np.where(std > 0, std, 1.0)
    return (X[train] - mean) / std, y[train], (X[test] - mean) / std, y[test]


def make(fit):
    from sklearn.ensemble import HistGradientBoostingClassifier

    from skgpsparse import SparseGPClassifier

    if fit == "hgb":
        return HistGradientBoostingClassifier(random_state=0)
    if fit in ("independent", "shared"):
        return SparseGPClassifier(random_state=0, multi_class=fit)
    return SparseGPClassifier(random_state=0)


def _commit():
    """The checkout's short commit, ``+`` when it has uncommitted changes."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "skgpsparse"], cwd=root,
                               capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""
    return head + ("+" if dirty else "")


def run(name, fit, n_train, n_test, seed):
    X, y, X_test, y_test = split(name, n_train, n_test, seed)
    if fit == "binary":
        first = np.unique(y)[0]
        y, y_test = (y == first).astype(int), (y_test == first).astype(int)
    model, commit = make(fit), _commit()  # the code this fit runs
    wall, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X, y)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    proba = model.predict_proba(X_test)
    column = np.searchsorted(model.classes_, y_test)
    p_true = np.clip(proba[np.arange(y_test.size), column], 1e-300, None)
    row = {
        "data": name, "fit": fit, "n_train": n_train, "n_test": int(y_test.size),
        "seed": seed, "wall_s": round(wall, 2), "cpu_s": round(cpu, 2),
        "nlp": round(float(-np.mean(np.log(p_true))), 4),
        "accuracy": round(float(np.mean(model.classes_[np.argmax(proba, 1)] == y_test)), 4),
        "classes": int(np.unique(y).size),
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"),
        "commit": commit,
    }
    if hasattr(model, "kernels_"):
        row["kernel"] = str(model.kernels_[0])
    elif hasattr(model, "kernel_"):
        row["kernel"] = str(model.kernel_)
    RESULTS.mkdir(exist_ok=True)
    with RUNS.open("a") as out:
        out.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)
    return row


def report():
    rows = [json.loads(line) for line in RUNS.read_text().splitlines() if line.strip()]
    lines = [
        "# Many classes: shared against independent one-vs-rest",
        "",
        "`python benchmarks/studies/multiclass.py` (one line per fit, in the order run; the "
        "machine is shared, so compare fits of one session by their CPU time).",
        "",
        "| data | fit | classes | n train | wall (s) | CPU (s) | test NLP | accuracy | kernel "
        "(first class) | when | commit | note |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['data']} | {r['fit']} | {r['classes']} | {r['n_train']} | {r['wall_s']} | "
            f"{r['cpu_s']} | {r['nlp']} | {r['accuracy']} | {r.get('kernel', '')} | "
            f"{r['when']} | {r.get('commit', '')} | {r.get('note', '')} |"
        )
    (RESULTS / "multiclass.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="pmlb_letter")
    parser.add_argument("--fits", default="binary,shared,independent,hgb")
    parser.add_argument("--n-train", type=int, default=5000)
    parser.add_argument("--n-test", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=1,
                        help="run the fits this many times, interleaved; print CPU medians")
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args(argv)
    if args.report:
        return report()
    fits = args.fits.split(",")
    cpu = {fit: [] for fit in fits}
    for _ in range(args.repeats):
        for fit in fits:
            cpu[fit].append(run(args.data, fit, args.n_train, args.n_test, args.seed)["cpu_s"])
    if args.repeats > 1:
        medians = {fit: float(np.median(times)) for fit, times in cpu.items()}
        print(json.dumps({"cpu_s": cpu, "median_cpu_s": medians}))
        if "binary" in medians:
            print(json.dumps({f"{fit} / binary": round(m / medians["binary"], 2)
                              for fit, m in medians.items()}))


if __name__ == "__main__":
    main()
