"""Many classes: where the shared one-vs-rest fit loses to the independent fits (issue 49).

The shared fit (``multi_class="shared"``) learns one kernel and a bias per class on a
class-stratified subsample, then gives each class its own basis under that kernel and runs
EP on every row. This study adds one step per class after the shared stage, on the same
split as ``benchmarks/studies/multiclass.py`` (its ``split``), and measures the test NLP and
the whole fit's CPU (process time) of each variant:

- ``shared``: the shared fit as it is;
- ``bias``: each class's bias re-learned on its own basis by its all-rows EP evidence;
- ``scale``: the bias, the amplitude and one common factor of the length scales per class
  (the shared kernel's shape kept);
- ``full``: every kernel hyperparameter and the bias per class (L-BFGS-B, at most 15
  iterations, from the shared values), on the class's own basis;
- ``full-sub``: as ``full`` on a random subsample of ``--refit-rows`` rows (EP on all rows
  after it);
- ``full-reselect``: ``full``, then the class's basis selected again under its kernel;
- ``learn-rows``: no per-class step, the shared learning on ``--learn-rows`` rows;
- ``learn-basis``: no per-class step, the shared learning's basis at ``--learn-basis``
  whatever the number of classes;
- ``learn-both``: ``--learn-rows`` and ``--learn-basis`` together;
- ``no-round-bound``: the shared learning's rounds after the first run their L-BFGS-B
  iterations in full (no early end by the charge bound of
  :mod:`skgpsparse.latent.learning._charge_bound`);
- ``full-rounds``: as ``no-round-bound``, and no stop on the predicted gain either.

``--per-class M`` answers whether one kernel for all classes is what costs: for the first
``M`` classes, each one-vs-rest model's own binary test NLP (``-mean log P(y_k | x)``) from
the shared fit, from the same model with every hyperparameter re-learned on its basis and
all rows (``full``), and from an independent binary fit of that class against the rest
(``SparseGPClassifier(random_state=0)``), with each step's CPU.

The per-class step runs inside the fit (the shared fit's per-class model is wrapped), so
the CPU includes it. Each fit appends a JSON line to ``results/multiclass_variants_runs.jsonl``;
``--report`` writes ``results/multiclass_variants.md``.

Usage::

    python benchmarks/studies/multiclass_variants.py --variants shared,bias,scale,full
    python benchmarks/studies/multiclass_variants.py --data pmlb_pendigits --n-train 2000
    python benchmarks/studies/multiclass_variants.py --report
"""

import argparse
import json
import sys
import time
import warnings
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from multiclass import _commit, split

RESULTS = Path(__file__).resolve().parent / "results"
RUNS = RESULTS / "multiclass_variants_runs.jsonl"


def _directions(kernel, variant):
    """Columns mapping the variant's free parameters to ``(theta, b)`` (log space)."""
    n_theta = kernel.n_dims
    if variant.startswith("full"):
        return np.eye(n_theta + 1)
    cols = []
    if variant == "scale":
        start = 0
        for hp in kernel.hyperparameters:
            if hp.fixed:
                continue
            col = np.zeros(n_theta + 1)
            col[start:start + hp.n_elements] = 1.0
            cols.append(col)
            start += hp.n_elements
    bias = np.zeros(n_theta + 1)
    bias[-1] = 1.0
    cols.append(bias)
    return np.column_stack(cols)


def _refit(params, kernel, bias, basis, X, y, variant, rng, refit_rows):
    """The class's ``(kernel, bias)`` re-learned on its basis by the all-rows EP evidence."""
    from skgpsparse.inference._ep import _EP_TOL
    from skgpsparse.latent.learning._ep_rounds import _units
    from skgpsparse.latent.learning._hyperparameters import BIAS_BOUNDS, minimize_theta
    from skgpsparse.latent.objectives._ep_evidence import AllRowsObjective
    from skgpsparse.latent.objectives._hyperprior import with_length_scale_prior

    X_r, y_r = X, y
    if variant == "full-sub" and y.size > refit_rows:
        rows = np.union1d(rng.choice(y.size, refit_rows, replace=False), basis)
        X_r, y_r = X[rows], y[rows]
    objective = AllRowsObjective(kernel, X_r, y_r, X[basis], (None, None), tol=1e-3,
                                 likelihood=params["likelihood"])
    target = with_length_scale_prior(objective, kernel, y_r.size)
    A = _directions(kernel, variant)
    units = _units(kernel, 1, X)
    start = np.append(kernel.theta, bias)
    bounds = np.vstack([kernel.bounds.reshape(-1, 2), BIAS_BOUNDS])

    def reduced(z, eval_gradient=True):
        full = np.clip(start + A @ (z * (A.T @ units) / A.sum(axis=0)), bounds[:, 0],
                       bounds[:, 1])
        out = target(full, eval_gradient)
        if not eval_gradient:
            return out
        return out[0], (A.T @ out[1]) * (A.T @ units) / A.sum(axis=0)

    z0 = np.zeros(A.shape[1])
    zb = np.column_stack([np.full(A.shape[1], -3.0), np.full(A.shape[1], 3.0)])
    z, _ = minimize_theta("fmin_l_bfgs_b", reduced, z0, zb)
    full = np.clip(start + A @ (z * (A.T @ units) / A.sum(axis=0)), bounds[:, 0], bounds[:, 1])
    objective.tol = _EP_TOL
    return kernel.clone_with_theta(full[:-1]), float(full[-1])


@contextmanager
def per_class_step(variant, refit_rows, seed):
    """The shared fit with the variant's per-class step before each class's EP."""
    from skgpsparse.classification.multiclass import _shared_fit

    original = _shared_fit._class_model
    if variant in ("shared", "learn-rows", "learn-basis", "learn-both", "no-round-bound", "full-rounds"):
        yield
        return
    counter = iter(range(10**6))

    def wrapped(params, shared, kernel, bias, basis, curve, X, y, accelerate):
        rng = np.random.RandomState(seed + next(counter))
        kernel, bias = _refit(params, kernel, bias, basis, X, y, variant, rng, refit_rows)
        if variant == "full-reselect":
            basis, curve = _shared_fit._class_basis(params, kernel, bias, None, X, y,
                                                    rng.randint(2**31 - 1))
        return original(params, shared, kernel, bias, basis, curve, X, y, accelerate)

    _shared_fit._class_model = wrapped
    try:
        yield
    finally:
        _shared_fit._class_model = original


@contextmanager
def learning_size(variant, learn_rows, learn_basis):
    from skgpsparse.classification.multiclass import _shared_learning as sl
    from skgpsparse.latent.learning import _ep_rounds

    saved = sl.LEARN_ROWS, sl.LEARN_BASIS, sl.LEARN_BUDGET, sl.LEARN_BASIS_PER_CLASS
    bound, gain = _ep_rounds._round_bound, _ep_rounds.PREDICT_GAIN
    if variant in ("no-round-bound", "full-rounds"):
        _ep_rounds._round_bound = lambda best_loss, tol: (lambda run_bounds: None)
    if variant == "full-rounds":
        _ep_rounds.PREDICT_GAIN = False
    if variant in ("learn-rows", "learn-both"):
        sl.LEARN_ROWS, sl.LEARN_BUDGET = learn_rows, 10**9
    if variant in ("learn-basis", "learn-both"):
        sl.LEARN_BASIS, sl.LEARN_BASIS_PER_CLASS = learn_basis, 0
    try:
        yield
    finally:
        sl.LEARN_ROWS, sl.LEARN_BASIS, sl.LEARN_BUDGET, sl.LEARN_BASIS_PER_CLASS = saved
        _ep_rounds._round_bound, _ep_rounds.PREDICT_GAIN = bound, gain


def run(args, variant):
    from skgpsparse import SparseGPClassifier

    X, y, X_test, y_test = split(args.data, args.n_train, args.n_test, args.seed)
    model = SparseGPClassifier(random_state=0, multi_class="shared")
    wall, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings(), per_class_step(variant, args.refit_rows, args.seed), \
            learning_size(variant, args.learn_rows, args.learn_basis):
        warnings.simplefilter("ignore")
        model.fit(X, y)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    proba = model.predict_proba(X_test)
    column = np.searchsorted(model.classes_, y_test)
    p_true = np.clip(proba[np.arange(y_test.size), column], 1e-300, None)
    amplitudes = [float(k.k1.constant_value) for k in model.kernels_]
    scales = [float(np.exp(np.mean(np.log(k.k2.length_scale)))) for k in model.kernels_]
    row = {
        "data": args.data, "variant": variant, "n_train": args.n_train,
        "n_test": int(y_test.size), "seed": args.seed, "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2), "nlp": round(float(-np.mean(np.log(p_true))), 4),
        "accuracy": round(float(np.mean(model.classes_[np.argmax(proba, 1)] == y_test)), 4),
        "classes": int(np.unique(y).size),
        "amplitude_range": [round(min(amplitudes), 3), round(max(amplitudes), 3)],
        "length_scale_gmean_range": [round(min(scales), 3), round(max(scales), 3)],
        "bias_range": [round(float(np.min(model.bias_)), 3),
                       round(float(np.max(model.bias_)), 3)],
        "when": datetime.now(UTC).strftime("%Y-%m-%d %H:%M"), "commit": _commit(),
    }
    if variant == "full-sub":
        row["refit_rows"] = args.refit_rows
    if variant in ("learn-rows", "learn-both"):
        row["learn_rows"] = args.learn_rows
    if variant in ("learn-basis", "learn-both"):
        row["learn_basis"] = args.learn_basis
    if args.note:
        row["note"] = args.note
    RESULTS.mkdir(exist_ok=True)
    with RUNS.open("a") as out:
        out.write(json.dumps(row) + "\n")
    print(json.dumps(row), flush=True)
    return row


def per_class(args):
    from skgpsparse import SparseGPClassifier
    from skgpsparse.classification.multiclass import _shared_fit

    X, y, X_test, y_test = split(args.data, args.n_train, args.n_test, args.seed)
    calls, original = [], _shared_fit._class_model

    def keeping(params, shared, kernel, bias, basis, curve, X_, y_, accelerate):
        calls.append((params, shared, kernel, bias, basis, curve, X_, y_, accelerate))
        return original(params, shared, kernel, bias, basis, curve, X_, y_, accelerate)

    _shared_fit._class_model = keeping
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = SparseGPClassifier(random_state=0, multi_class="shared").fit(X, y)
    _shared_fit._class_model = original

    def nlp(log_p_plus, positive):
        log_p = np.where(positive, log_p_plus, np.log1p(-np.exp(np.minimum(log_p_plus, -1e-300))))
        return round(float(-np.mean(log_p)), 5)

    for k in range(args.per_class):
        positive = y_test == clf.classes_[k]
        row = {"data": args.data, "seed": args.seed, "class": str(clf.classes_[k]),
               "shared": nlp(clf.estimators_[k]._predictor.log_proba(X_test, 1.0), positive)}
        params, shared, kernel, bias, basis, curve, X_, y_, accelerate = calls[k]
        cpu = time.process_time()
        kernel2, bias2 = _refit(params, kernel, bias, basis, X_, y_, "full", None, 0)
        model = original(params, shared, kernel2, bias2, basis, curve, X_, y_, accelerate)
        row["full"], row["full_cpu_s"] = (nlp(model._predictor.log_proba(X_test, 1.0), positive),
                                          round(time.process_time() - cpu, 2))
        cpu = time.process_time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            binary = SparseGPClassifier(random_state=0).fit(X, y == clf.classes_[k])
        row["independent"] = nlp(binary.predict_log_proba(X_test)[:, 1], positive)
        row["independent_cpu_s"] = round(time.process_time() - cpu, 2)
        row["kernels"] = [str(kernel), str(kernel2), str(binary.kernel_)]
        row["commit"] = _commit()
        print(json.dumps(row), flush=True)
        with (RESULTS / "multiclass_per_class_runs.jsonl").open("a") as out:
            out.write(json.dumps(row) + "\n")


def report():
    rows = [json.loads(line) for line in RUNS.read_text().splitlines() if line.strip()]
    lines = [
        "# Many classes: per-class steps after the shared fit",
        "",
        ("`python benchmarks/studies/multiclass_variants.py` (one line per fit, in the order "
        "run; CPU is the process time of the whole fit; the machine is shared by three "
        "sessions, so compare fits of one session)."),
        "",
        ("| data | variant | classes | n train | seed | CPU (s) | test NLP | accuracy | "
        "amplitude (min, max) | length scale gmean (min, max) | bias (min, max) | when | "
        "commit | note |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        extra = {k: r[k] for k in ("refit_rows", "learn_rows", "learn_basis") if k in r}
        note = "; ".join([f"{k}={v}" for k, v in extra.items()] + [r.get("note", "")]).strip("; ")
        lines.append(
            f"| {r['data']} | {r['variant']} | {r['classes']} | {r['n_train']} | {r['seed']} | "
            f"{r['cpu_s']} | {r['nlp']} | {r['accuracy']} | {r['amplitude_range']} | "
            f"{r['length_scale_gmean_range']} | {r['bias_range']} | {r['when']} | "
            f"{r.get('commit', '')} | {note} |"
        )
    per_class_runs = RESULTS / "multiclass_per_class_runs.jsonl"
    if per_class_runs.exists():
        lines += [
            "",
            "## One kernel for all classes? Each class's own binary test NLP (`--per-class`)",
            "",
            ("| data | seed | class | shared | full refit | CPU of the refit (s) | independent "
            "| CPU of the independent fit (s) | commit |"),
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for line in per_class_runs.read_text().splitlines():
            r = json.loads(line)
            lines.append(
                f"| {r['data']} | {r['seed']} | {r['class']} | {r['shared']} | {r['full']} | "
                f"{r['full_cpu_s']} | {r['independent']} | {r['independent_cpu_s']} | "
                f"{r.get('commit', '')} |"
            )
    (RESULTS / "multiclass_variants.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="pmlb_letter")
    parser.add_argument("--variants", default="shared,bias,scale,full")
    parser.add_argument("--n-train", type=int, default=5000)
    parser.add_argument("--n-test", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--refit-rows", type=int, default=1000)
    parser.add_argument("--learn-rows", type=int, default=5000)
    parser.add_argument("--learn-basis", type=int, default=100)
    parser.add_argument("--note", default="")
    parser.add_argument("--per-class", type=int, default=0)
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args(argv)
    if args.report:
        return report()
    if args.per_class:
        return per_class(args)
    for variant in args.variants.split(","):
        run(args, variant)


if __name__ == "__main__":
    main()
