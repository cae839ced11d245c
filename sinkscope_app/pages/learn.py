"""Learn (``/learn``): a guided walk from clouds of points to the Sinkhorn Transformer
(``sinkscope_app.learn``)."""

from sinkscope_app import frame
from sinkscope_app.learn import page

page.show(frame.current())
