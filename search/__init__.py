"""Design-space exploration: Optuna studies over hardware parameters and mapping knobs.

A study file (:mod:`.study_file`) names a target preset, workloads, a search space (:mod:`.space`),
objectives and caps, a sampler (:mod:`.samplers`), a seed and a budget. Each trial maps every workload
through the target family's pipeline — every decision solved, checked and simulated — and scores the
configuration (:mod:`.evaluate`); inner solves are cached by content and warm-started from neighbouring
trials (:mod:`.cache`). Trials live in an Optuna storage (a journal file by default, PostgreSQL for
clusters) with heartbeats, so killed workers' trials are retried and studies resume (:mod:`.storage`,
:mod:`.worker`). Results are the Pareto front, hypervolume, tables and figures (:mod:`.pareto`,
:mod:`.report`). Commands: ``solvermap explore`` (:mod:`.explore`), ``solvermap batch`` (submitit,
:mod:`.batch`) and ``solvermap status`` (:mod:`.status`), registered by :mod:`.cli`.

Nothing here knows a target: a family plugs in through ``hardware.targets``, ``ir.workloads`` and
``mappers.pipeline_for`` and the metric names of DEVELOPERS.md.
"""
