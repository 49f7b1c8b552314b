"""Studies shipped with solvermap (YAML package data): ``solvermap explore <name>`` runs one by name."""
