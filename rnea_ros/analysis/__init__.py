"""Recorded data against the model: bags, residuals, fits, the CLI."""
