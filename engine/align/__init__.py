"""Word alignment: links between the whitespace words of two texts read off the engine's
relations (softmax, balanced, exact, partial and unbalanced transport), scored on gold
(precision, recall, F1, AER, null and total F1) and tuned on a dev corpus.

``engine.align.api`` holds ``align``, ``align_pairs``, ``tune``; ``engine.align.score``
the metrics; ``engine.align.readers`` the file formats; ``engine.align.cli`` the
``python -m engine align`` command.
"""
