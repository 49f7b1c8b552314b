"""Capacity-limited partitioning, merging and heterogeneous bin packing (seed 004 Tables 4.1–4.4).

The one shared model for "put items into bins": SARA compute partitioning (Table 4.2, L599–608),
SARA global merging (Tables 4.3/4.4, L615–623, L670), PUMA core/tile grouping and memory-tile packing.
Problem, decision and objective: :mod:`solvermap.formulations.problems.partition`.

One file per model, each ``build`` a list of ``_add_<family>`` calls named after its docstring's constraint
families:

=======================  =====================================================================================
:mod:`.slots`            the slot model (variant ``ours``): items into bin slots, acyclic by slot order, retiming
:mod:`.columns`          the column model: an exact cover by convex bins with lazy cycle cuts (acyclic problems)
:mod:`.delay_relaxation` the column model with item delays: certified bounds for retiming problems
:mod:`.layers`           the layered column model: a primal search for retiming problems (bins at layers)
:mod:`.table42`          the seed's literal Table 4.2 (variant ``table42``), for comparison
:mod:`.bounds`           certified combinatorial lower bounds and the diagnosis of infeasible problems
:mod:`.replicas`         a parallelization factor's isomorphic copies: one copy's solution copied, and the
                         light relaxation whose bound × copies certifies the whole
:mod:`.first_fit`        a constructive packing (several open bins in topological order), the chunks' warm start
                         when no baseline packs a large acyclic problem
=======================  =====================================================================================

How they are combined — clusters, copies, chunks, two phases, windows, the neighbourhood search — is the strategy
(:mod:`.strategy`, :mod:`.two_phase`, :mod:`.chunks`, single solves in :mod:`.solves`), on one budget of
deterministic work (:mod:`solvermap.formulations.strategy`); its tuned numbers are one typed object,
:data:`.settings.SETTINGS` (:class:`.settings.PartitionSettings`). Timings: ``bench/sara_partition_bench.py``
and ``studies/sara_partition/README.md``.
"""

from solvermap.formulations.partition.bounds import LowerBound, count_shortfall, diagnose, exclusive_needs, lower_bound
from solvermap.formulations.partition.columns import Column, build_columns, convex_bins, decode_columns
from solvermap.formulations.partition.delay_relaxation import build_delay_relaxation
from solvermap.formulations.partition.settings import SETTINGS, PartitionSettings
from solvermap.formulations.partition.slots import build, decode
from solvermap.formulations.partition.strategy import KIND, NAME, VARIANTS, Variant, solve
from solvermap.formulations.partition.table42 import build_table42
from solvermap.formulations.partition.two_phase import LP_BACKENDS, RETIMING_SEARCHES

__all__ = ["NAME", "KIND", "VARIANTS", "RETIMING_SEARCHES", "LP_BACKENDS", "SETTINGS", "PartitionSettings",
           "LowerBound", "lower_bound", "diagnose", "count_shortfall", "exclusive_needs", "build", "build_table42", "build_columns", "decode",
           "decode_columns", "build_delay_relaxation", "convex_bins", "Column", "solve", "Variant"]
