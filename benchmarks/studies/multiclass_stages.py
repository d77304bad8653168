"""Where the shared multi-class fit's CPU goes, stage by stage, against one binary fit.

Issue 49 asks for the default multi-class fit at <= 3x one binary default fit's CPU on pmlb
letter (26 classes, 5,000 rows). This study times each stage of the shared fit
(``skgpsparse/classification/multiclass/_shared_fit.py``) in one process, one BLAS thread,
``n_jobs=None`` (the classes in turn), on the splits of ``multiclass.py``:

- ``learning``: the shared kernel and biases (``learn_shared``);
- ``size curve``: each class's ``max_basis="auto"`` curve (``choose_basis_size``);
- ``selection``: each class's basis selection under its kernel (``LatentSparseGP._select``,
  twice for a class that keeps its own kernel);
- ``own-kernel trial``: each class's trial of its own kernel (``class_kernel``);
- ``EP on all rows``: each class's final EP run (``_class_model``);
- ``combination``: the choice of ``logit_weight_`` (``set_logit_weight``);

each stage's CPU exclusive of the stages inside it, and the rest of the fit. Fits:
``default`` (``SparseGPClassifier(random_state=0)``), ``no-trial`` (the own-kernel trial
switched off, ``_shared_fit.CLASS_KERNELS = False``), ``no-trial-100`` (and
``max_basis=100``), and ``binary`` / ``binary-100``: the default fit (and at
``max_basis=100``) of class 0 against the rest, the goal's unit; ``screen<k>`` (a study
of a cheaper trial): the trial first on a class's first ``k`` basis vectors wherever its basis
is larger (``_class_kernels.SCREEN_BASIS``, 200). Each fit runs in a fresh
process. It prints one JSON line per fit and writes ``results/multiclass_stages.md``.

Usage::

    python benchmarks/studies/multiclass_stages.py --seeds 0
    python benchmarks/studies/multiclass_stages.py --sets pmlb_connect_4:2000 --seeds 0,1
"""

import argparse
import functools
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
from _common.report import write_keeping_findings  # noqa: E402

RESULTS = HERE / "results" / "multiclass_stages.md"
SETS = "pmlb_letter:5000"
FITS = "binary,binary-100,default,no-trial,no-trial-100"
STAGES = ("learning", "size curve", "selection", "own-kernel trial", "EP on all rows",
          "combination")


class StageClock:
    """Process time per stage, each stage's exclusive of the stages it calls."""

    def __init__(self):
        self.totals = dict.fromkeys(STAGES, 0.0)
        self._stack = []  # [stage, start, time of the stages inside]

    def wrap(self, stage, function):
        @functools.wraps(function)
        def timed(*args, **kwargs):
            self._stack.append([stage, time.process_time(), 0.0])
            try:
                return function(*args, **kwargs)
            finally:
                name, start, inner = self._stack.pop()
                spent = time.process_time() - start
                self.totals[name] += spent - inner
                if self._stack:
                    self._stack[-1][2] += spent
        return timed


def fit_one(name, n_train, fit, seed):
    """One fit in this process: a JSON line with its CPU, stages and test NLP."""
    from multiclass import split
    from threadpoolctl import threadpool_limits

    import skgpsparse.classification._fitting as fitting
    import skgpsparse.classification.multiclass._shared_fit as shared_fit
    from skgpsparse import SparseGPClassifier
    from skgpsparse.latent._model import LatentSparseGP

    clock = StageClock()
    shared_fit.learn_shared = clock.wrap("learning", shared_fit.learn_shared)
    shared_fit.choose_basis_size = clock.wrap("size curve", shared_fit.choose_basis_size)
    shared_fit.class_kernel = clock.wrap("own-kernel trial", shared_fit.class_kernel)
    shared_fit._class_model = clock.wrap("EP on all rows", shared_fit._class_model)
    LatentSparseGP._select = clock.wrap("selection", LatentSparseGP._select)
    fitting.set_logit_weight = clock.wrap("combination", fitting.set_logit_weight)
    if fit.startswith("no-trial"):
        shared_fit.CLASS_KERNELS = False
    elif fit.startswith("screen"):  # the own-kernel trial screened on fewer basis vectors
        import skgpsparse.classification.multiclass._class_kernels as class_kernels

        class_kernels.SCREEN_BASIS = int(fit[6:].split("-")[0])
    X, y, X_test, y_test = split(name, n_train, 5000, seed)
    if fit.startswith("binary"):  # class 0 against the rest
        first = np.unique(y)[0]
        y, y_test = (y == first).astype(int), (y_test == first).astype(int)
    with threadpool_limits(1):
        model = SparseGPClassifier(random_state=0,
                                   max_basis=100 if fit.endswith("-100") else "auto")
        start = time.process_time()
        model.fit(X, y)
        cpu = time.process_time() - start
        log_proba = model.predict_log_proba(X_test)
    index = np.searchsorted(model.classes_, y_test)
    nlp = float(-np.mean(log_proba[np.arange(index.size), index]))
    sizes = np.atleast_1d(getattr(model, "n_basis_", 0))
    return {"data": name, "fit": fit, "seed": seed, "classes": int(np.unique(y).size),
            "n_train": n_train, "cpu": round(cpu, 2), "nlp": round(nlp, 4),
            "basis": f"{int(sizes.min())}-{int(sizes.max())}",
            "stages": {k: round(v, 2) for k, v in clock.totals.items()}}


def _table(rows):
    binary = {(r["data"], r["seed"]): r["cpu"] for r in rows if r["fit"] == "binary"}
    lines = ["| data | fit | seed | basis | CPU (s) | / binary | test NLP | "
             + " | ".join(STAGES) + " | rest |",
             "|---|---|---|---|---:|---:|---:|" + "---:|" * (len(STAGES) + 1)]
    for r in rows:
        unit = binary.get((r["data"], r["seed"]))
        ratio = f"{r['cpu'] / unit:.1f}" if unit else ""
        stages = [r["stages"][k] for k in STAGES]
        lines.append(f"| {r['data']} | {r['fit']} | {r['seed']} | {r['basis']} | {r['cpu']:.1f} "
                     f"| {ratio} | {r['nlp']:.4f} | "
                     + " | ".join(f"{s:.1f}" for s in stages)
                     + f" | {r['cpu'] - sum(stages):.1f} |")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=SETS, help="name:n_train, comma separated")
    parser.add_argument("--fits", default=FITS)
    parser.add_argument("--seeds", default="0")
    parser.add_argument("--one", nargs=4, metavar=("NAME", "N_TRAIN", "FIT", "SEED"),
                        help=argparse.SUPPRESS)  # a single fit (the child process)
    args = parser.parse_args()
    if args.one:
        name, n_train, fit, seed = args.one
        print(json.dumps(fit_one(name, int(n_train), fit, int(seed))), flush=True)
        return
    rows = fits_in_children(__file__, args.seeds, args.sets,
                            lambda name: args.fits.split(","))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=HERE).stdout.strip()
    write_keeping_findings(RESULTS, "\n".join([
        "# The shared multi-class fit's CPU by stage, against one binary fit", "",
        f"`python benchmarks/studies/multiclass_stages.py --sets {args.sets} --seeds "
        f"{args.seeds}` (commit {commit}, {time.strftime('%Y-%m-%d %H:%M')} UTC; one BLAS "
        "thread; CPU in seconds, process time; each stage's exclusive of the stages inside "
        "it; `/ binary` is the fit's CPU over the binary default fit's of the same seed).", "",
        *_table(rows), "",
    ]))


if __name__ == "__main__":
    main()
