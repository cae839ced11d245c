"""Lab: train a Sinkhorn Transformer and its baselines to a coupling system (``/lab``)."""
