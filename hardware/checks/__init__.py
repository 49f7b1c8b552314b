"""Independent checkers: each re-derives every rule of a decision from the problem and the decision.

A checker imports only problem/decision types (``solvermap.formulations.problems``) and the IR, never
the formulation module it checks, and returns a :class:`~solvermap.results.CheckReport` whose
violations name the broken rule.
"""
