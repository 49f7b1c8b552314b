"""The tuned numbers of the partition strategy, in one typed, documented object (defaults = the values the
SARA study and the benchmarks were measured with; ``bench/`` and ``studies/sara_partition`` say what they buy).

Shares are fractions of the budget (deterministic work, :mod:`solvermap.formulations.strategy`) that is
*left* when the step starts, unless the field says otherwise; work caps are in work units.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class PartitionSettings:
    """Read at solve time from the one shared instance :data:`SETTINGS` (a study or test may set a field)."""

    # model sizes ------------------------------------------------------------------------------------
    column_budget: int = 40_000  # convex bins enumerated at most; above it the slot model runs alone
    column_nodes: int = 3_000_000  # search nodes of the convex-bin enumeration at most
    variable_budget: int = 250_000  # item × slot pairs above which the slot model searches a window around the warm start
    item_symmetry: bool = False  # symmetry breaking between interchangeable items in the slot model (:mod:`.symmetry`;
    # off: not yet checked on every study row, and it does not close kmeans x4 -- see its module docstring)
    symmetry_items: int = 400  # items above which the slot model gets no symmetry breaking between items (:mod:`.symmetry`) ...
    symmetry_tests: int = 2_000  # ... and the automorphism (VF2) tests it runs at most
    reachability_items: int = 6_000  # items above which the chain bound (an n × n reachability matrix) is skipped
    layer_pairs: int = 150_000  # column × layer pairs of one layered model at most
    cycle_cuts: int = 40  # quotient cycles cut per round of the column model at most
    # chunks (large acyclic clusters) -----------------------------------------------------------------
    chunk_items: int = 150  # an acyclic cluster with more items than this is solved in consecutive chunks ...
    chunk_size: int = 60  # ... of about this many items (whole bins of the warm start)
    first_fit_recent: int = 8  # the constructive start (no warm start) also tries the bins opened last, this many
    # replicated clusters (:mod:`.replicas`) --------------------------------------------------------------
    copy_share: float = 0.4  # one copy solved alone
    light_share: float = 0.5  # the light relaxation (the bound of the whole)
    share_share: float = 0.5  # the shares relaxation, when the light one leaves a gap ...
    retiming_probe_share: float = 0.4  # ... after the probe whether every partition of a copy needs retiming
    # problems without retiming: slot model, column model with cycle cuts, slot model -----------------
    quick_slot_share: float = 0.25  # the first slot-model solve ...
    quick_slot_work: float = 2.0  # ... at most this much work when the problem has at most quick_slot_items items
    quick_slot_items: int = 150  # (larger ones rarely have few convex bins)
    cover_share: float = 0.7  # the column model with its cut rounds
    repeat_floor: float = 0.5  # the last slot-model solve runs only when more than this is left
    # retiming problems: phase A (no retiming), then phase B ------------------------------------------
    phase_a_share: float = 0.3  # phase A, when the column model cannot prove it ...
    phase_a_share_columns: float = 0.5  # ... and when it can (acyclic, convex bins enumerable)
    joint_first_share: float = 0.05  # phase B's uncapped joint model, before the retiming caps
    retiming_caps: tuple[int, ...] = (0,)  # retiming caps solved before the incumbent's cap
    capped_share: float = 0.5  # every capped model but the last
    relaxation_share: float = 0.5  # the delay relaxation minimised (objectives without a common step)
    level_share: float = 0.2  # one level of the delay relaxation at most
    layer_share: float = 0.5  # one layered column model at most
    layer_extra: int = 2  # layer counts tried above the fewest a layered solution needs
    # the large-neighbourhood search of phase B on LP-based backends ----------------------------------
    neighbourhood_slots: int = 4  # the first neighbourhoods: this many consecutive slots (by delay) ...
    neighbourhood_growth: int = 2  # ... and this many more after a pass over all of them finds nothing
    neighbourhood_work: float = 2.0  # work of one neighbourhood solve at most


SETTINGS = PartitionSettings()
