"""``python -m sinkscope …`` is the ``sinkscope`` command (:mod:`sinkscope.cli`)."""

import sys

from sinkscope.cli import main

sys.exit(main())
