"""UNIT tensorization study (seed 002): Table I and ResNet-18 conv layers on this machine's VNNI."""
