"""Memory: peak resident memory of predicting 20 million rows, and the fit's up-front check.

Part 1, prediction. For each of the four estimators (fitted on a small set, ``d = 10``) a
fresh subprocess fills ``X`` of ``--rows`` rows (20,000,000 x 10 float64 = 1.6 GB, written
block by block so that no second copy exists) and calls the heaviest predict method:
``RelevanceVectorRegressor.predict(X, return_std=True)``,
``RelevanceVectorClassifier.predict_proba(X)``, ``SparseGPRegressor.predict(X,
return_std=True)`` and ``SparseGPClassifier.predict_proba(X)`` (binary and three classes).
The table gives the peak resident memory of the process (``ru_maxrss``) against the size of
``X`` and of the output, and what the call held beyond its input and output. With
``--baseline TREE`` the same runs are made on another checkout of the package (e.g. the
commit before the row blocks), each under a 5 GiB address-space limit
(``RLIMIT_AS``), so that a method that does not work in row blocks fails with a
``MemoryError`` instead of taking the shared machine's memory.

Part 2, the fit's check. ``SparseGPRegressor(max_basis=20000)`` and
``SparseGPClassifier(max_basis=20000)`` on 200,000 rows (d = 10), each in a subprocess: the
time to the ``MemoryError``, the process's peak memory and the message (with ``--baseline``,
the old tree under the same 5 GiB limit, for comparison).

The runs are one at a time (the machine is shared). Usage (from the repository root)::

    python benchmarks/scale/memory.py                                   # writes results/memory.md
    python benchmarks/scale/memory.py --rows 2000000 --out /tmp/m.md    # a quicker check
    python benchmarks/scale/memory.py --baseline /tmp/base              # and an older tree
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
D = 10
PREDICT_CASES = ("rvr", "rvc", "gpr", "gpc", "gpc3")
FIT_CASES = ("gpr-fit", "gpc-fit")
BASELINE_LIMIT = 5 * 2**30  # bytes of address space for the baseline tree's runs


def _maxrss():
    """Peak resident memory of this process so far, in bytes (Linux counts kB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _rss():
    """Current resident memory in bytes (``/proc/self/statm``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _fitted(case):
    """The estimator of ``case`` fitted on a small set, and the method to time."""
    from sklearn.gaussian_process.kernels import RBF

    from skgpsparse import (
        RelevanceVectorClassifier,
        RelevanceVectorRegressor,
        SparseGPClassifier,
        SparseGPRegressor,
    )

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, D))
    f = np.sin(X[:, 0]) + 0.5 * np.cos(X[:, 1] * X[:, 2])
    y = f + 0.1 * rng.normal(size=len(f))
    kernel = RBF(np.sqrt(D))
    if case == "rvr":
        model = RelevanceVectorRegressor(kernel, random_state=0).fit(X[:400], y[:400])
        return model, lambda Z: model.predict(Z, return_std=True), len(model.coef_)
    if case == "rvc":
        model = RelevanceVectorClassifier(kernel, random_state=0).fit(X[:200], f[:200] > 0)
        return model, model.predict_proba, len(model.estimators_[0].coef_)
    fixed = {"max_basis": 50, "optimizer": None, "random_state": 0}
    if case == "gpr":
        model = SparseGPRegressor(kernel, **fixed).fit(X, y)
        return model, lambda Z: model.predict(Z, return_std=True), 50
    labels = f > 0 if case == "gpc" else np.digitize(f, [-0.4, 0.4])
    model = SparseGPClassifier(kernel, **fixed).fit(X, labels)
    return model, model.predict_proba, 50


def _worker_predict(case, rows):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, method, basis = _fitted(case)
    X = np.empty((rows, D))
    rng = np.random.default_rng(1)
    for a in range(0, rows, 1_000_000):
        rng.standard_normal(out=X[a : a + 1_000_000])
    rss_before, peak_before = _rss(), _maxrss()
    tic = time.perf_counter()
    record = {"case": case, "rows": rows, "basis": basis, "x_bytes": X.nbytes,
              "rss_before": rss_before, "peak_before": peak_before}
    try:
        out = method(X)
        parts = out if isinstance(out, tuple) else (out,)
        record["out_bytes"] = sum(part.nbytes for part in parts)
        record["error"] = None
    except MemoryError as error:
        record["out_bytes"] = None
        record["error"] = f"MemoryError: {str(error)[:160]}"
    record["seconds"] = time.perf_counter() - tic
    record["peak"] = _maxrss()
    return record


def _worker_fit(case):
    from skgpsparse import SparseGPClassifier, SparseGPRegressor

    rng = np.random.default_rng(2)
    X = rng.normal(size=(200_000, D))
    f = np.sin(X[:, 0]) + 0.5 * np.cos(X[:, 1] * X[:, 2])
    if case == "gpr-fit":
        model, y = SparseGPRegressor(max_basis=20_000, random_state=0), f
    else:
        model, y = SparseGPClassifier(max_basis=20_000, random_state=0), f > 0
    tic = time.perf_counter()
    try:
        model.fit(X, y)
        error = None
    except MemoryError as exc:
        error = str(exc)
    return {"case": case, "seconds": time.perf_counter() - tic, "peak": _maxrss(),
            "error": error}


def _run(args_list, tree, limit):
    """Run this script's worker in a subprocess on ``tree``; its JSON record."""
    env = dict(os.environ, PYTHONPATH=str(tree), PYTHONDONTWRITEBYTECODE="1")

    def set_limit():
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    try:
        done = subprocess.run(
            [sys.executable, __file__, *args_list], env=env, capture_output=True, text=True,
            preexec_fn=set_limit, timeout=1800, check=False,
        )
    except subprocess.TimeoutExpired:
        return {"error": "no result in 30 minutes"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if not lines:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        return {"error": f"worker failed: {tail[:200]}"}
    return json.loads(lines[-1])


def _gb(n_bytes):
    return "-" if n_bytes is None else f"{n_bytes / 1e9:.2f}"


_NAMES = {
    "rvr": "RelevanceVectorRegressor.predict(return_std=True)",
    "rvc": "RelevanceVectorClassifier.predict_proba",
    "gpr": "SparseGPRegressor.predict(return_std=True)",
    "gpc": "SparseGPClassifier.predict_proba (2 classes)",
    "gpc3": "SparseGPClassifier.predict_proba (3 classes)",
}


def _predict_table(records):
    lines = [
        (
            "| tree | method | basis | X (GB) | output (GB) | peak RSS (GB) | peak / X | "
            "held beyond X and output (GB) | s |"
        ),
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for tree, r in records:
        if "case" not in r:
            lines.append(f"| {tree} | {r.get('label', '?')} | | | | | | {r['error']} | |")
            continue
        name = _NAMES[r["case"]]
        if r["error"]:
            lines.append(
                f"| {tree} | {name} | {r['basis']} | {_gb(r['x_bytes'])} | - | "
                f"{_gb(r['peak'])} | {r['peak'] / r['x_bytes']:.2f} | {r['error']} | "
                f"{r['seconds']:.1f} |"
            )
            continue
        # the call's own arrays: its peak less what the process held before it, less the output
        held = max(r["peak"], r["peak_before"]) - r["rss_before"] - r["out_bytes"]
        lines.append(
            f"| {tree} | {name} | {r['basis']} | {_gb(r['x_bytes'])} | {_gb(r['out_bytes'])} | "
            f"{_gb(r['peak'])} | {r['peak'] / r['x_bytes']:.2f} | {_gb(max(held, 0))} | "
            f"{r['seconds']:.1f} |"
        )
    return lines


def _fit_table(records):
    lines = ["| tree | fit | time to the error (s) | peak RSS (GB) | message |", "|---|---|---|---|---|"]
    for tree, r in records:
        name = {"gpr-fit": "SparseGPRegressor(max_basis=20000)",
                "gpc-fit": "SparseGPClassifier(max_basis=20000)"}.get(r.get("case"), "?")
        message = (r.get("error") or "no error").replace("|", "/")
        seconds = f"{r['seconds']:.2f}" if "seconds" in r else "-"
        lines.append(f"| {tree} | {name}, 200,000 rows | {seconds} | {_gb(r.get('peak'))} | "
                     f"{message} |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000_000, help="rows to predict")
    parser.add_argument("--baseline", type=Path, default=None,
                        help="another checkout to run as well, under a 5 GiB limit")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "memory.md")
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        kind, case = args.worker.split(":")
        record = _worker_predict(case, args.rows) if kind == "predict" else _worker_fit(case)
        print(json.dumps(record))
        return
    trees = [("this tree", REPO, None)]
    if args.baseline is not None:
        trees.append((f"baseline ({args.baseline.name}, 5 GiB limit)", args.baseline,
                      BASELINE_LIMIT))
    predictions, fits = [], []
    for case in PREDICT_CASES:
        for label, tree, limit in trees:
            record = _run(["--worker", f"predict:{case}", "--rows", str(args.rows)], tree, limit)
            record.setdefault("label", _NAMES[case])
            predictions.append((label, record))
            print(_predict_table([predictions[-1]])[-1], flush=True)
    for case in FIT_CASES:
        for label, tree, limit in trees:
            fits.append((label, _run(["--worker", f"fit:{case}"], tree, limit)))
            print(_fit_table([fits[-1]])[-1], flush=True)
    sys.path.insert(0, str(HERE.parent))
    from _common.machine import machine

    text = [
        "# Memory: predicting 20 million rows, and the fit's up-front check",
        "",
        f"`python benchmarks/scale/memory.py {' '.join(argv or sys.argv[1:])}`".replace(" `", "`"),
        (
            f"on {machine()}; {args.rows:,} rows x {D} features to predict; one subprocess per "
            "line, one at a time. Peak RSS is the process's `ru_maxrss` (the interpreter, the "
            "fitted model, X and the output included); 'held beyond X and output' is that "
            "peak less the resident memory just before the call and less the output."
        ),
        "",
        *_predict_table(predictions),
        "",
        *_fit_table(fits),
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(text))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
