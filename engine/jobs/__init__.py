"""Long work as engine jobs: start, progress with partial results, a cooperative Stop that
keeps the best or partial result, the result.

Five kinds (:data:`KINDS`): ``lab_train`` (the Lab's cloud models trained in turn),
``lab_sweep`` (the width sweep), ``align_corpus`` (a corpus aligned by every method, scored
and ranked), ``train_aligner`` (a word aligner trained on gold links) and ``compare_text``
(the Lab's text comparison). A job is a body ``{"kind", "settings", "data"}``
(:mod:`.spec` checks and prices it), a work function (:mod:`.lab`, :mod:`.text`) run with a
:class:`~.context.Context`, and a record on a :class:`~.board.Board` (state, progress, place
in line, partial result, Stop, result).

- :mod:`.local`: the embedded engine's jobs, in threads of its process;
- :mod:`.served`: the served engine's jobs, Ray tasks with resource requests, the board a
  named Ray actor (``/v1/jobs``, :mod:`engine.serving.jobs_api`);
- :mod:`.results`: typed torch-free readers of the documents, the same objects from both.

Importing this package imports neither torch nor Ray.
"""

from .board import ACTIVE, ENDED, STATES  # noqa: F401
from .spec import KINDS  # noqa: F401
