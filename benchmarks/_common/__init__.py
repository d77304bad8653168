"""Helpers shared by the benchmark scripts of every question folder.

A script in ``benchmarks/<question>/`` puts ``benchmarks/`` on ``sys.path`` and imports
them as ``_common.data`` (the offline datasets), ``_common.machine`` (the machine line of
the result headers), ``_common.peers`` (GPflow's peers and the shared metrics),
``_common.clf_bench`` (the classifier benchmarks' splits, timed fits and paired tests),
``_common.report`` (result files whose hand-written findings a rerun keeps) and
``_common.children`` (a study's fits, one per fresh process).
"""
