"""Problem and decision types, shared by a formulation, its checker and its baselines.

Plain frozen dataclasses with an ``objective(problem, decision)`` function where the decision has a
scalar measure: the formulation, the baselines and the checker all score a decision the same way,
and the checker never needs to import the formulation.
"""
