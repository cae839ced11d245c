"""The solver: entropic transport (balanced, and relaxed marginals), references."""
