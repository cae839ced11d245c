"""Lab (``/lab``): train a Sinkhorn Transformer and its baselines to a coupling system
(``sinkscope_app.lab``)."""

from sinkscope_app import frame
from sinkscope_app.lab import page

page.show(frame.current())
