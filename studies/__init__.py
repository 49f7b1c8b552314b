"""Studies: scripts that reproduce the seeds' tables side by side with our numbers."""
