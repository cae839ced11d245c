"""Align (``/align``): word alignments from softmax and from transport, scored on gold
(``sinkscope_app.align``)."""

from sinkscope_app import frame
from sinkscope_app.align import page

page.show(frame.current())
