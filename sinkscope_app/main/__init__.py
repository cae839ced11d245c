"""The main page: softmax attention beside Sinkhorn couplings for two texts (``/``)."""
