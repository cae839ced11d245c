"""Align: word alignments from softmax and from transport, scored on gold (``/align``).

The page's parts: :mod:`.params` (its address), :mod:`.words` (its words and tables),
:mod:`.calls` (one pair's engine calls), :mod:`.corpus` (a file of pairs aligned by every
method, the engine's job), :mod:`.pair` and :mod:`.corpus_view` (the two views), :mod:`.page`.
"""

from .corpus import (MAX_CORPUS_PAIRS, MAX_UPLOAD_BYTES, MAX_UPLOAD_MB,  # noqa: F401
                     corpus_table, job_body, links_file, read_file, table_csv)
from .params import (DEFAULTS, MASS_OPTIONS, METHODS, TAU_OPTIONS, THRESHOLDED,  # noqa: F401
                     compare_link, method_defaults, nearest_mass, parse_query, to_query)
from .words import (UnreadText, column_names, file_error, float_columns,  # noqa: F401
                    shown_rows, ui, unread_message)
