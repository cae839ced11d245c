"""The relation pipeline: measures and weights, scores, relate, metrics, lattices."""
