"""Learn: a guided walk from clouds of points to the Sinkhorn Transformer (``/learn``)."""
