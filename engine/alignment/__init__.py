"""Word alignment: links between the whitespace words of two texts read off the engine's
relations (softmax, balanced, exact, partial and unbalanced transport), scored on gold
(precision, recall, F1, AER, null and total F1) and tuned on a dev corpus.

``engine.alignment.api`` holds ``align``, ``align_pairs``, ``tune``, ``compare_methods``;
``engine.alignment.score`` the metrics and the bootstrap; ``engine.alignment.verdict`` which
method wins and the command that reproduces a table; ``engine.alignment.readers`` the file
formats; ``engine.alignment.cli`` the ``python -m engine align`` command.
"""
