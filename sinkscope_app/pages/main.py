"""The main page (``/``): softmax attention beside Sinkhorn couplings (``sinkscope_app.main``)."""

from sinkscope_app import frame
from sinkscope_app.main import page

page.show(frame.current())
