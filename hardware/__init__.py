"""Hardware specs (pydantic models + YAML presets), cost models, simulators and independent checkers.

``solvermap.hardware.<family>`` holds a family's spec model (registered with
:func:`~solvermap.hardware.targets.register_family`); ``hardware/presets/*.yaml`` the shipped targets;
``hardware/checks/`` the checkers, which never import the formulations they check.
"""
