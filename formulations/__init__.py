"""Formulations: one explicit model per kind of decision, shared by every target that needs it.

``solver.py`` is the facade (``SolverConfig``, ``SolveResult``, backends); ``decision.py`` the protocol
(build → solve → decode); ``problems/`` the problem and decision types that checkers share.
"""
