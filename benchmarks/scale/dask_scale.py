"""The default estimators on a dask.distributed cluster: a fit beyond one worker's memory, the
overhead of the distributed fit against the in-memory one, and a worker killed mid-fit.

Every fit here is the **default constructor** (``max_basis`` and ``random_state`` set, all
else default), except part 3's table of greedy steps on the partitions, which only a fit at
fixed hyperparameters (``optimizer=None``) makes at these sizes.

Part 0 (latency): the wall and driver CPU time of a no-op call on the actors (one actor; every
partition at once), the floor of each round trip on this machine.

Part 1 (memory): a LocalCluster of 2 worker processes, each with a ``memory_limit`` below the
size of the whole ``n x max_basis`` kernel block, fits SparseGPRegressor and
SparseGPClassifier on dask arrays generated on the workers. The peak resident memory of each
worker process is sampled during the fit.

Part 2 (overhead, default constructor): the same fits in memory and on the 2-process cluster,
interleaved; wall and CPU time (driver, and driver + workers), their ratio, the actor calls
and the bytes that cross the network (pickled arguments and results, driver <-> workers),
the prediction difference and whether the bases agree.

Part 3 (greedy steps, fixed hyperparameters): the regressor's forward selection on the
partitions, with the next working set fetched by each append (two round trips per step) and
without (three, as before): per-step overhead ``(t_dask - t_memory) / steps``, calls and
bytes per step.

Part 4 (recovery): the default regressor on 3 worker processes, undisturbed and with the
worker of the first chunk killed (SIGKILL) halfway through its actor calls.

The per-call records (function, wall time, rows per partition) go to
``results/dask_scale_costs.json``, which ``dask_projection.py`` turns into the projection of
a 10^8-row fit on 16 and 64 workers (the dask page).

Usage::

    python benchmarks/scale/dask_scale.py           # all parts (30-60 minutes on a shared machine)
    python benchmarks/scale/dask_scale.py --quick    # small sizes
    python benchmarks/scale/dask_scale.py --smoke --parts greedy,recovery   # checks the script

Writes ``results/dask_scale.md`` (``dask_scale_quick.md`` with ``--quick``).
"""

import argparse
import json
import os
import signal
import sys
import threading
import time
import warnings
from collections import defaultdict
from pathlib import Path

import numpy as np
import psutil

import skgpsparse.rows._dask as rows_dask
from skgpsparse import SparseGPClassifier, SparseGPRegressor
from skgpsparse.regression._partitioned import PartitionedRegressionState
from skgpsparse.rows._dask import DaskRows

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _common.machine import machine  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


class _RecordingRows(DaskRows):
    """DaskRows that records each call (function, wall time, bytes) and keeps the record
    when it closes (the fit closes it); ``kill_at`` kills partition 0's worker mid-fit."""

    last = None
    kill_at = None  # the call after whose sending the worker of partition 0 is killed

    def _call(self, fn, args_per_partition):
        name = fn.__name__
        if name == "_run_and_fetch":  # RowStore.sum_and_fetch: (fn, local, args)
            name = next(iter(args_per_partition.values()))[0].__name__ + "+fetch"
        sent, received = self.bytes_sent, self.bytes_received
        tic = time.perf_counter()
        out = super()._call(fn, args_per_partition)
        self.__dict__.setdefault("records", []).append(
            (name, time.perf_counter() - tic, self.bytes_sent - sent,
             self.bytes_received - received)
        )
        return out

    def close(self):
        _RecordingRows.last = {
            "calls": self.calls, "sent": self.bytes_sent, "received": self.bytes_received,
            "partitions": self.n_partitions, "rows": self.n, "journal": self.journal_bytes,
            "recoveries": self.recoveries, "recovery_seconds": self.recovery_seconds,
            "records": self.__dict__.get("records", []),
        }
        super().close()

    def _dispatched(self, fn):
        if _RecordingRows.kill_at is not None and self.calls + 1 == _RecordingRows.kill_at:
            _RecordingRows.kill_at = None
            address = self.actors[0]._address
            pid = self.client.run(os.getpid)[address]
            os.kill(pid, signal.SIGKILL)


rows_dask.DaskRows = _RecordingRows  # the store the dask backend opens for every fit


def _data(n, d, seed=0):
    rng = np.random.RandomState(seed)
    X = rng.uniform(-2.0, 2.0, (n, d))
    f = np.sin(X[:, 0]) + 0.5 * np.cos(X[:, 1] * X[:, 2])
    return X, f + 0.1 * rng.randn(n), (f + 0.3 * rng.randn(n) > 0.0).astype(int)


ESTIMATORS = {"SparseGPRegressor": SparseGPRegressor, "SparseGPClassifier": SparseGPClassifier}


def _default(name, p, **params):
    return ESTIMATORS[name](max_basis=p, random_state=0, **params)


def _worker_cpu(client):
    """Total CPU seconds (user + system) of the worker processes so far."""
    pids = client.run(os.getpid).values()
    return sum(sum(psutil.Process(pid).cpu_times()[:2]) for pid in pids)


def _timed(fit, client=None):
    """``(model, wall s, driver CPU s, worker CPU s)`` of ``fit()``."""
    workers = _worker_cpu(client) if client is not None else 0.0
    wall, cpu = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = fit()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return model, wall, cpu, (_worker_cpu(client) - workers if client is not None else 0.0)


class _PeakMemory:
    """Samples the resident memory of the given processes every 0.2 s."""

    def __init__(self, pids):
        self.procs = [psutil.Process(pid) for pid in pids]
        self.peak = [0] * len(pids)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for i, proc in enumerate(self.procs):
                try:
                    self.peak[i] = max(self.peak[i], proc.memory_info().rss)
                except psutil.Error:
                    pass
            time.sleep(0.2)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


def _cluster(memory_limit, n_workers=2):
    import dask
    import distributed

    # The actors' arrays are unmanaged memory (not spillable): spilling and pausing cannot
    # help, so the binding limit is the nanny's, which kills a worker at 95 % of the limit.
    dask.config.set(
        {
            "distributed.worker.memory.target": False,
            "distributed.worker.memory.spill": False,
            "distributed.worker.memory.pause": False,
        }
    )
    cluster = distributed.LocalCluster(
        n_workers=n_workers, threads_per_worker=1, processes=True, memory_limit=memory_limit,
        dashboard_address=None,
    )
    return cluster, distributed.Client(cluster)


def _noop(part):
    return None


def latency_part(lines, costs, calls=100):
    import dask.array as da

    cluster, client = _cluster("2GiB")
    try:
        X = da.from_array(np.zeros((2000, 4)), chunks=(1000, 4))
        with DaskRows(X, None) as rows:
            for _ in range(10):
                rows.map(_noop)
            out = {}
            for label, call in (
                ("one actor", lambda: rows.actors[0].run(_noop).result()),
                ("both partitions (rows.map)", lambda: rows.map(_noop)),
            ):
                walls, cpus = [], []
                for _ in range(calls):
                    wall, cpu = time.perf_counter(), time.process_time()
                    call()
                    walls.append(time.perf_counter() - wall)
                    cpus.append(time.process_time() - cpu)
                out[label] = (float(np.median(walls)), float(np.median(cpus)),
                              float(np.percentile(walls, 90)))
    finally:
        client.close()
        cluster.close()
    costs["latency"] = {k: w for k, (w, _, _) in out.items()}
    lines += [
        "## Round-trip latency of an actor call",
        "",
        f"A no-op call, {calls} times after 10 warm-up calls, on a LocalCluster of 2 worker "
        "processes (one partition each): the floor of every round trip of a fit on this "
        "machine.",
        "",
        "| call | median wall | 90th percentile wall | median driver CPU |",
        "|---|---|---|---|",
        *[f"| {k} | {1e3 * w:.1f} ms | {1e3 * w90:.1f} ms | {1e3 * c:.1f} ms |"
          for k, (w, c, w90) in out.items()],
        "",
    ]
    print("\n".join(lines[-6:]))


def _by_function(record):
    """``{function: [calls, wall seconds, bytes sent, bytes received]}`` of a recorded fit."""
    out = defaultdict(lambda: [0, 0.0, 0, 0])
    for name, wall, sent, received in record["records"]:
        for k, value in enumerate((1, wall, sent, received)):
            out[name][k] += value
    return dict(out)


def memory_part(n, d, p, limit_mb, lines, costs, estimators=tuple(ESTIMATORS)):
    import dask.array as da

    block_mb = n * p * 8 / 2**20
    chunk = -(-n // 2)
    rows = []
    for name in estimators:
        cluster, client = _cluster(f"{limit_mb}MiB")
        try:
            pids = list(client.run(os.getpid).values())
            # generated on the workers, chunk by chunk: the driver never holds the rows
            Xd = da.random.RandomState(0).uniform(-2.0, 2.0, (n, d), chunks=(chunk, d))
            f = da.sin(Xd[:, 0]) + 0.5 * da.cos(Xd[:, 1] * Xd[:, 2])
            noise = da.random.RandomState(1).standard_normal(n, chunks=chunk)
            yd = f + 0.1 * noise if name == "SparseGPRegressor" else (f + 0.3 * noise > 0)
            before = [psutil.Process(pid).memory_info().rss for pid in pids]
            with _PeakMemory(pids) as peak:
                model, wall, cpu, wcpu = _timed(lambda: _default(name, p).fit(Xd, yd), client)
            alive = len(client.scheduler_info()["workers"])
        finally:
            client.close()
            cluster.close()
        record = _RecordingRows.last
        costs.setdefault("fits", {})[f"{name} memory"] = {
            "n": n, "p": p, "workers": 2, "wall": wall, "driver_cpu": cpu,
            "by_function": _by_function(record), "calls": record["calls"],
        }
        basis = np.atleast_2d(model.basis_indices_).shape[1]
        rows.append(
            f"| {name} | {'yes' if alive == 2 and basis == p else 'no'} | {basis} | "
            f"{wall:.0f} s | {cpu:.0f} s | {wcpu:.0f} s | {record['calls']} | "
            f"{before[0] / 2**20:,.0f} / {before[1] / 2**20:,.0f} MiB | "
            f"{peak.peak[0] / 2**20:,.0f} MiB | {peak.peak[1] / 2**20:,.0f} MiB | {limit_mb} MiB |"
        )
        print(rows[-1])
    lines += [
        "## Default fits whose kernel block exceeds one worker's memory",
        "",
        f"n = {n:,} rows x {d} features, `max_basis={p}, random_state=0`, everything else "
        f"default (learning on the driver over the `learning_rows='auto'` subsample, the "
        f"posterior, calibration and EP over every row on the workers); the n x max_basis "
        f"block takes {block_mb:,.0f} MiB; 2 worker processes with memory_limit = {limit_mb} "
        f"MiB each (one chunk of {chunk:,} rows per worker, generated on the workers). Peak "
        "RSS: the worker processes' resident memory, sampled every 0.2 s; before the fit: "
        "theirs with no data (the workers' own). The nanny restarts a worker at 95 % of its "
        f"limit ({0.95 * limit_mb:.0f} MiB). Each partition holds its {chunk * d * 8 / 2**20:,.0f} "
        f"MiB chunk of X; the classifier's also its {block_mb / 2:,.0f} MiB share of the block "
        "(EP's V = L^-1 K_uf), the regressor's none (its passes form V by blocks of rows). "
        "CPU: the driver process, and the two workers together.",
        "",
        "| estimator | completed | basis | wall | driver CPU | workers CPU | actor calls "
        "| RSS before the fit | peak RSS worker 1 | peak RSS worker 2 | limit |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def _basis_equal(a, b):
    a, b = np.atleast_2d(a.basis_indices_), np.atleast_2d(b.basis_indices_)
    return a.shape == b.shape and bool(np.all(a == b))


def _prediction(model, X):
    if isinstance(model, SparseGPClassifier):
        return model.predict_proba(X)
    return model.predict(X)


def overhead_part(n, d, p, lines, costs, repeats=1):
    """Default fits in memory and on the cluster, interleaved (medians of ``repeats``)."""
    import dask.array as da

    cluster, client = _cluster("6GiB")
    rows = []
    try:
        X, y, labels = _data(n, d, seed=1)
        chunk = -(-n // 2)
        Xd = da.from_array(X, chunks=(chunk, d)).persist()
        targets = {"SparseGPRegressor": y, "SparseGPClassifier": labels}
        for name in ESTIMATORS:
            yd = da.from_array(targets[name], chunks=chunk).persist()
            mem, dsk = [], []
            for _ in range(repeats):  # interleaved, medians: the machine is shared
                ref, *t = _timed(lambda: _default(name, p).fit(X, targets[name]))
                mem.append(t)
                model, *t = _timed(lambda: _default(name, p).fit(Xd, yd), client)
                dsk.append(t)
            record = _RecordingRows.last
            m, k = np.median(mem, axis=0), np.median(dsk, axis=0)
            diff = float(np.max(np.abs(_prediction(model, X[:5000]) - _prediction(ref, X[:5000]))))
            costs.setdefault("fits", {})[f"{name} overhead"] = {
                "n": n, "p": p, "workers": 2, "wall": float(k[0]), "driver_cpu": float(k[1]),
                "memory_wall": float(m[0]), "by_function": _by_function(record),
                "calls": record["calls"],
            }
            rows.append(
                f"| {name} | {n:,} | {m[0]:.1f} s ({m[1]:.1f}) | {k[0]:.1f} s ({k[1]:.1f} + "
                f"{k[2]:.1f}) | {k[0] / m[0]:.2f} | {(k[1] + k[2]) / m[1]:.2f} | "
                f"{record['calls']} | {record['sent'] / 2**20:.2f} MiB | "
                f"{record['received'] / 2**20:.2f} MiB | {diff:.1e} | "
                f"{'yes' if _basis_equal(model, ref) else 'NO'} |"
            )
            print(rows[-1])
    finally:
        client.close()
        cluster.close()
    lines += [
        "## Overhead of the default fit on the cluster",
        "",
        f"{d} features, `max_basis={p}, random_state=0`, all else default. In memory: the "
        "estimator's own threads; on dask: 2 worker processes of one thread, one chunk each, "
        "the data persisted on the workers first. Medians of "
        f"{repeats} interleaved runs; in parentheses the CPU seconds (in memory: the process; "
        "on dask: driver + workers). Bytes: pickled arguments and results of the actor calls. "
        "Difference: the largest one between the two models' `predict` / `predict_proba` on "
        "5,000 training rows.",
        "",
        "| estimator | n | in memory | dask, 2 workers | wall ratio | CPU ratio | actor calls "
        "| sent | received | max difference | same basis |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def _three_round_trips(self, selector, rng):
    self._speculation = None  # no pre-drawn working set: take, score, append


def greedy_part(sizes, d, p, lines, costs, repeats=2):
    """The regressor's forward selection on the partitions at fixed hyperparameters."""
    import dask.array as da
    from sklearn.gaussian_process.kernels import RBF
    from sklearn.gaussian_process.kernels import ConstantKernel as C

    def model():
        return SparseGPRegressor(C(1.0) * RBF(2.0), max_basis=p, optimizer=None,
                                 noise_variance=0.01, random_state=0)

    speculate = PartitionedRegressionState.speculate
    cluster, client = _cluster("6GiB")
    rows = []
    try:
        for n in sizes:
            X, y, _ = _data(n, d, seed=1)
            chunk = -(-n // 2)
            Xd = da.from_array(X, chunks=(chunk, d)).persist()
            yd = da.from_array(y, chunks=chunk).persist()
            runs = defaultdict(list)
            records = {}
            for _ in range(repeats):  # interleaved, medians: the machine is shared
                ref, *t = _timed(lambda: model().fit(X, y))
                runs["memory"].append(t)
                for trips, method in ((3, _three_round_trips), (2, speculate)):
                    PartitionedRegressionState.speculate = method
                    fitted, *t = _timed(lambda: model().fit(Xd, yd), client)
                    runs[trips].append(t)
                    records[trips] = (_RecordingRows.last, _basis_equal(fitted, ref))
            PartitionedRegressionState.speculate = speculate
            mem = np.median(runs["memory"], axis=0)
            for trips in (3, 2):
                k = np.median(runs[trips], axis=0)
                record, same = records[trips]
                if trips == 2:
                    costs.setdefault("greedy", {})[str(n)] = {
                        "n": n, "p": p, "workers": 2, "wall": float(k[0]), "steps": p,
                        "memory_wall": float(mem[0]), "by_function": _by_function(record),
                    }
                rows.append(
                    f"| {n:,} | {trips} | {mem[0]:.2f} s ({mem[1]:.1f}) | {k[0]:.2f} s "
                    f"({k[1]:.1f} + {k[2]:.1f}) | {k[0] / mem[0]:.2f} | "
                    f"{1e3 * (k[0] - mem[0]) / p:+.1f} ms | {record['calls'] / p:.2f} | "
                    f"{record['sent'] / p / 1024:.1f} KiB | "
                    f"{record['received'] / p / 1024:.1f} KiB | {'yes' if same else 'NO'} |"
                )
                print(rows[-1])
    finally:
        PartitionedRegressionState.speculate = speculate
        client.close()
        cluster.close()
    lines += [
        "## Greedy steps on the partitions (fixed hyperparameters)",
        "",
        f"SparseGPRegressor(C(1) * RBF(2), max_basis={p}, optimizer=None, "
        f"noise_variance=0.01): {p} forward steps of matching pursuit on working sets of 59 "
        f"over every row, {d} features; 2 worker processes, one chunk each, data persisted. "
        "Round trips per step: 3 = fetch the working set's rows, score, append (before); 2 = "
        "the append also returns the next working set's rows (drawn ahead with a copy of the "
        f"random state). Medians of {repeats} interleaved runs; CPU seconds in parentheses "
        "(driver + workers on dask).",
        "",
        "| n | round trips per step | in memory | dask, 2 workers | ratio | overhead per "
        "step | calls per step | sent per step | received per step | same basis |",
        "|---|---|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def recovery_part(n, d, p, lines, costs):
    """The default regressor undisturbed, then with a worker process killed mid-fit."""
    import dask.array as da

    cluster, client = _cluster("6GiB", n_workers=3)
    try:
        X, y, _ = _data(n, d, seed=2)
        chunk = -(-n // 3)
        Xd, yd = da.from_array(X, chunks=(chunk, d)), da.from_array(y, chunks=chunk)
        reference, t_ref, *_ = _timed(lambda: _default("SparseGPRegressor", p).fit(Xd, yd))
        calls = _RecordingRows.last["calls"]
        _RecordingRows.kill_at = calls // 2
        model, t_kill, *_ = _timed(lambda: _default("SparseGPRegressor", p).fit(Xd, yd))
        record = _RecordingRows.last
        killed_in = record["records"][calls // 2 - 1][0]
        same = np.array_equal(model.basis_indices_, reference.basis_indices_) and np.array_equal(
            model.predict(X[:5000]), reference.predict(X[:5000])
        )
    finally:
        client.close()
        cluster.close()
    costs["recovery"] = {"n": n, "seconds": record["recovery_seconds"],
                         "journal": record["journal"]}
    lines += [
        "## A worker killed mid-fit",
        "",
        f"SparseGPRegressor(max_basis={p}, random_state=0) on n = {n:,} rows x {d} features, "
        "3 worker processes with one chunk each. The worker holding the first chunk is killed "
        f"(SIGKILL) once call {calls // 2} of {calls} (`{killed_in}`) is sent; its chunk is "
        "recomputed on a surviving worker and the partition's journal replayed (see the dask "
        "page). Single runs: the time lost is noisy on a shared machine; the rebuild's own "
        "time is measured inside the fit.",
        "",
        "| undisturbed | worker killed | time lost | of it in the rebuild | partitions rebuilt "
        "| journal kept on the driver | same model |",
        "|---|---|---|---|---|---|---|",
        f"| {t_ref:.1f} s | {t_kill:.1f} s | {t_kill - t_ref:+.1f} s | "
        f"{record['recovery_seconds']:.1f} s | {record['recoveries']} | "
        f"{record['journal'] / 2**20:.2f} MiB | {'yes (bit for bit)' if same else 'NO'} |",
        "",
    ]
    print("\n".join(lines[-8:]))


PARTS = ("latency", "memory", "overhead", "greedy", "recovery")
SIZES = {  # (n, d, max_basis[, memory limit MiB])
    "full": dict(memory=(1_000_000, 10, 100, 700), overhead=(100_000, 10, 100),
                 greedy=([20_000, 100_000], 10, 100), recovery=(100_000, 10, 100)),
    "quick": dict(memory=(60_000, 10, 50, 1000), overhead=(30_000, 10, 50),
                  greedy=([5_000], 10, 50), recovery=(10_000, 10, 50)),
    "smoke": dict(memory=(4_000, 5, 10, 2000), overhead=(3_000, 5, 10),
                  greedy=([3_000], 5, 10), recovery=(3_000, 5, 10)),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (checks the script)")
    parser.add_argument("--parts", default=",".join(PARTS), help="comma-separated subset")
    parser.add_argument("--tag", default="", help="suffix of the output files' names")
    parser.add_argument("--estimators", default=",".join(ESTIMATORS), help="of the memory part")
    args = parser.parse_args()
    size = "smoke" if args.smoke else "quick" if args.quick else "full"
    lines = ["# The default estimators on a dask cluster", "", f"Machine: {machine()}", "",
             "A shared 2-core machine (other jobs running): wall times are noisy; compare the "
             "interleaved runs of one table, and the CPU columns.", ""]
    costs = {"size": size}
    RESULTS.mkdir(exist_ok=True)
    stem = ("dask_scale" if size == "full" else f"dask_scale_{size}") + args.tag
    for part in args.parts.split(","):
        if part == "latency":
            latency_part(lines, costs)
        elif part == "memory":
            for name in args.estimators.split(","):  # written after each estimator
                memory_part(*SIZES[size][part], lines, costs, estimators=(name,))
                (RESULTS / f"{stem}.md").write_text("\n".join(lines))
                (RESULTS / f"{stem}_costs.json").write_text(json.dumps(costs, indent=1))
        else:
            globals()[f"{part}_part"](*SIZES[size][part], lines, costs)
        # after each part, so that a long run leaves what it measured
        (RESULTS / f"{stem}.md").write_text("\n".join(lines))
        (RESULTS / f"{stem}_costs.json").write_text(json.dumps(costs, indent=1))
    print(f"wrote {RESULTS / stem}.md and _costs.json")


if __name__ == "__main__":
    main()
