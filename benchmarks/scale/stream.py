"""Out-of-core: rows streamed from disk (np.memmap) through ``partial_fit``, chunk by chunk.

The synthetic problem of ``benchmarks/scale/million.py`` (20 features uniform on [-1, 1],
``f = sin(3 x_0) + x_1^2 - 0.5 x_2 x_3``; the classifier's labels ``f + 0.3 e > median(f)``,
the regressor's targets ``f + 0.1 e``) is written chunk by chunk to memory-mapped files in a
temporary directory, then each estimator runs in its own subprocess (so that its peak resident
memory is its own):

- ``stream``: ``partial_fit`` over the chunks (each chunk read through its own ``np.memmap``,
  copied and unmapped, so that the file's pages do not count as the process' memory); the
  first call fits as ``fit`` does. The resident memory (``/proc/self/statm``) is recorded after
  the first chunk and after the last, and the peak (``VmHWM`` of ``/proc/self/status``: the
  process' own high-water mark. Not ``ru_maxrss``, which a child started by ``subprocess``
  inherits from its parent across ``vfork`` + ``exec``: it reported the parent's peak while
  writing the files, 1.85 GB at 10^7 rows, for the classifier and the regressor alike);
- ``memory``: ``fit`` on the first ``--subsample`` rows, loaded in memory.

Both with the hyperparameters fixed (``optimizer=None``, the kernel ``C(1) * RBF(sqrt(d))`` and,
for the regressor, the noise variance 0.01, as ``million.py``) and ``max_basis=--p``, or with
``--default`` the default constructors (``max_basis=--p, random_state=0``, all else default:
the first ``partial_fit`` learns the kernel, and the regressor's noise, on the first chunk as
``fit`` does, the later chunks update the posterior with them fixed; the ``memory`` fit learns
them on its rows); test
metrics on ``--test`` fresh rows. The regressor runs when ``SparseGPRegressor`` has a
``partial_fit``. Rows per second are the streamed rows after the first chunk over their wall
and CPU time (``time.process_time``); the machine is shared, so compare within a run.

Usage::

    python benchmarks/scale/stream.py                        # 10^7 rows, chunks of 10^5
    python benchmarks/scale/stream.py --rows 1000000         # 10^6 rows
    python benchmarks/scale/stream.py --rows 300000 --subsample 300000 --tag quick

Writes ``benchmarks/scale/results/stream_run.md`` (``--tag`` adds a suffix);
``benchmarks/scale/results/stream.md`` is the commented record of the runs.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).resolve().parent / "results"
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

sys.path.insert(0, str(ROOT))

from _common.machine import machine  # noqa: E402

from skgpsparse._memory import state_nbytes  # noqa: E402


def synthetic(rng, n, d):
    """Rows of ``million.py``'s problem: ``X``, the latent ``f``, the noise draws."""
    X = rng.uniform(-1.0, 1.0, (n, d))
    f = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 - 0.5 * X[:, 2] * X[:, 3]
    return X, f, rng.standard_normal(n)


def targets(estimator, f, e, threshold):
    if estimator == "classifier":
        return (f + 0.3 * e > threshold).astype(np.int64)
    return f + 0.1 * e


def write_data(folder, rows, d, chunk, seed):
    """``X.dat`` (float64) and ``f.dat``, ``e.dat`` written chunk by chunk; the test rows."""
    rng = np.random.default_rng(seed)
    files = {name: folder / f"{name}.dat" for name in ("X", "f", "e")}
    shapes = {"X": (rows, d), "f": (rows,), "e": (rows,)}
    maps = {k: np.memmap(files[k], np.float64, "w+", shape=shapes[k]) for k in files}
    for start in range(0, rows, chunk):
        X, f, e = synthetic(rng, min(chunk, rows - start), d)
        stop = start + X.shape[0]
        maps["X"][start:stop], maps["f"][start:stop], maps["e"][start:stop] = X, f, e
    for m in maps.values():
        m.flush()
    # the classifier's threshold: the median of f (million.py), from a large draw
    threshold = float(np.median(synthetic(np.random.default_rng(seed + 1), 200_000, d)[1]))
    X_test, f_test, e_test = synthetic(np.random.default_rng(seed + 2), 100_000, d)
    np.savez(folder / "test.npz", X=X_test, f=f_test, e=e_test, threshold=threshold)


def read_rows(folder, name, start, stop, d=None):
    """Rows ``start:stop`` of a memmapped file, through a map of those rows only (unmapped)."""
    width = 1 if d is None else d
    mm = np.memmap(
        folder / f"{name}.dat", np.float64, "r", offset=8 * width * start,
        shape=(stop - start,) if d is None else (stop - start, d),
    )
    out = np.array(mm)
    del mm
    return out


def peak_resident_gb():
    """The process' own peak resident set (``VmHWM``; see the module docstring)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024**2
    raise RuntimeError("no VmHWM in /proc/self/status")


def resident_gb():
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 1024**3


def make_model(estimator, d, p, ep_sweeps, default=False):
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.gaussian_process.kernels import ConstantKernel as C

    from skgpsparse import SparseGPClassifier, SparseGPRegressor

    if default:
        if estimator == "classifier":
            return SparseGPClassifier(max_basis=p, random_state=0, stream_ep_sweeps=ep_sweeps)
        return SparseGPRegressor(max_basis=p, random_state=0)
    kernel = C(1.0) * RBF(np.sqrt(d))
    if estimator == "classifier":
        return SparseGPClassifier(
            kernel, max_basis=p, optimizer=None, random_state=0, stream_ep_sweeps=ep_sweeps
        )
    return SparseGPRegressor(
        kernel, noise_variance=0.01, max_basis=p, optimizer=None, random_state=0
    )


def metrics(estimator, model, X, y):
    if estimator == "classifier":
        proba = np.clip(model.predict_proba(X)[np.arange(y.size), y], 1e-300, 1.0)
        return {"test_nlp": float(-np.mean(np.log(proba))),
                "test_error": float(np.mean(model.predict(X) != y))}
    mean, std = model.predict(X, return_std=True)
    var = std**2 + model.noise_variance_
    nlpd = 0.5 * np.mean(np.log(2 * np.pi * var) + (y - mean) ** 2 / var)
    return {"test_rmse": float(np.sqrt(np.mean((y - mean) ** 2))), "test_nlpd": float(nlpd),
            "test_z2": float(np.mean((y - mean) ** 2 / var))}


def child(args):
    folder = Path(args.folder)
    test = np.load(folder / "test.npz")
    threshold = float(test["threshold"])
    y_test = targets(args.estimator, test["f"], test["e"], threshold)
    model = make_model(args.estimator, args.d, args.p, args.ep_sweeps, args.default)
    out = {"estimator": args.estimator, "mode": args.mode, "load_before": os.getloadavg()[0]}
    if args.mode == "stream" and not hasattr(model, "partial_fit"):
        print("RESULT " + json.dumps(dict(out, note="no partial_fit")), flush=True)
        return
    warnings.simplefilter("ignore")
    classes = {"classes": [0, 1]} if args.estimator == "classifier" else {}
    if args.mode == "memory":
        X = read_rows(folder, "X", 0, args.subsample, args.d)
        y = targets(args.estimator, read_rows(folder, "f", 0, args.subsample),
                    read_rows(folder, "e", 0, args.subsample), threshold)
        w, c = time.perf_counter(), time.process_time()
        model.fit(X, y)
        out["wall"], out["cpu"] = time.perf_counter() - w, time.process_time() - c
        out["rows"] = args.subsample
    else:
        chunk_times = []
        for i, start in enumerate(range(0, args.rows, args.chunk)):
            stop = min(start + args.chunk, args.rows)
            X = read_rows(folder, "X", start, stop, args.d)
            y = targets(args.estimator, read_rows(folder, "f", start, stop),
                        read_rows(folder, "e", start, stop), threshold)
            w, c = time.perf_counter(), time.process_time()
            model.partial_fit(X, y, **classes)
            chunk_times.append((time.perf_counter() - w, time.process_time() - c))
            if i == 0:
                out["first_wall"], out["first_cpu"] = chunk_times[0]
                out["rss_after_first_gb"] = resident_gb()
                out["state_after_first_mb"] = state_nbytes(model) / 1024**2
            if i % 10 == 0:
                print(f"chunk {i} rows {stop} cpu {time.process_time():.1f}", file=sys.stderr)
            if i == 1:
                out["state_after_second_mb"] = state_nbytes(model) / 1024**2
        rest = np.array(chunk_times[1:]) if len(chunk_times) > 1 else np.zeros((1, 2))
        streamed = args.rows - min(args.chunk, args.rows)
        out["rows"] = args.rows
        out["stream_wall"], out["stream_cpu"] = rest.sum(axis=0).tolist()
        out["rows_per_s_wall"] = streamed / max(out["stream_wall"], 1e-9)
        out["rows_per_s_cpu"] = streamed / max(out["stream_cpu"], 1e-9)
        out["rss_after_last_gb"] = resident_gb()
        out["state_after_last_mb"] = state_nbytes(model) / 1024**2
        out["wall"] = out["first_wall"] + out["stream_wall"]
        out["cpu"] = out["first_cpu"] + out["stream_cpu"]
    out.update(metrics(args.estimator, model, test["X"], y_test))
    out["peak_rss_gb"] = peak_resident_gb()
    out["load_after"] = os.getloadavg()[0]
    print("RESULT " + json.dumps(out), flush=True)


def run_child(args, estimator, mode, folder):
    cmd = [sys.executable, __file__, "--child", "--folder", str(folder), "--estimator",
           estimator, "--mode", mode, "--rows", str(args.rows), "--chunk", str(args.chunk),
           "--d", str(args.d), "--p", str(args.p), "--subsample", str(args.subsample),
           "--ep-sweeps", str(args.ep_sweeps)] + ["--default"] * args.default
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    except subprocess.TimeoutExpired:
        return {"estimator": estimator, "mode": mode, "note": f"timed out ({args.timeout} s)"}
    line = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if not line:
        print(proc.stdout[-2000:], proc.stderr[-3000:])
        return {"estimator": estimator, "mode": mode, "note": "failed"}
    return json.loads(line[0][7:])


def table(runs, args):
    lines = [
        f"# stream.py: {args.rows:,} rows x {args.d} from np.memmap, chunks of {args.chunk:,}, "
        f"max_basis={args.p}",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {machine()}; "
        f"{'default constructors' if args.default else 'fixed hyperparameters'}; "
        f"classifier stream_ep_sweeps={args.ep_sweeps}. `memory`: fit on the first "
        f"{args.subsample:,} rows in memory. Test: 100,000 fresh rows.",
        "",
        "| estimator | mode | rows | wall s | CPU s | rows/s after chunk 1 (wall / CPU) | "
        "RSS after chunk 1 / last GB | peak RSS GB | fitted state MB (chunk 1 / 2 / last) | "
        "test metrics | load |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        if "note" in r:
            lines.append(f"| {r['estimator']} | {r['mode']} | | | | | | | | {r['note']} | |")
            continue
        test = ", ".join(f"{k[5:]} {v:.4f}" for k, v in r.items() if k.startswith("test_"))
        if r["mode"] == "stream":
            speed = f"{r['rows_per_s_wall']:,.0f} / {r['rows_per_s_cpu']:,.0f}"
            rss = f"{r['rss_after_first_gb']:.2f} / {r['rss_after_last_gb']:.2f}"
            state = (f"{r['state_after_first_mb']:.2f} / {r.get('state_after_second_mb', 0):.2f}"
                     f" / {r['state_after_last_mb']:.2f}")
        else:
            speed = rss = state = ""
        lines.append(
            f"| {r['estimator']} | {r['mode']} | {r['rows']:,} | {r['wall']:.1f} | "
            f"{r['cpu']:.1f} | {speed} | {rss} | {r['peak_rss_gb']:.2f} | {state} | {test} | "
            f"{r['load_before']:.1f}-{r['load_after']:.1f} |"
        )
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--chunk", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--p", type=int, default=100)
    parser.add_argument("--subsample", type=int, default=1_000_000)
    parser.add_argument("--ep-sweeps", type=int, default=10)
    parser.add_argument("--only", choices=["classifier", "regressor"])
    parser.add_argument("--modes", default="stream,memory")
    parser.add_argument("--timeout", type=float, default=7200.0)
    parser.add_argument("--tag", default="")
    parser.add_argument("--default", action="store_true",
                        help="the default constructors (learned hyperparameters)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--estimator", help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.subsample = min(args.subsample, args.rows)
    if args.child:
        child(args)
        return
    runs = []
    with tempfile.TemporaryDirectory(prefix="skgpsparse_stream_") as tmp:
        folder = Path(tmp)
        write_data(folder, args.rows, args.d, args.chunk, seed=0)
        for estimator in [args.only] if args.only else ["classifier", "regressor"]:
            for mode in args.modes.split(","):
                r = run_child(args, estimator, mode, folder)
                print(r, flush=True)
                runs.append(r)
    text = table(runs, args)
    print(text)
    suffix = f"_{args.tag}" if args.tag else ""
    (RESULTS / f"stream_run{suffix}.md").write_text(text)


if __name__ == "__main__":
    main()
