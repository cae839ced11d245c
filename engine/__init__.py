"""sinkscope's engine: texts as measures, softmax attention and Sinkhorn couplings.

The engine by concept, one sub-package each:

- ``engine.solver``: entropic transport on scores (balanced and relaxed marginals), references.
- ``engine.models``: the allow-list, the encoder, queries and keys per architecture.
- ``engine.relation``: measures and weights, scores, ``relate``, metrics, lattices, rankings.
- ``engine.alignment``: word alignments read off relations, scored on gold, over corpora.
- ``engine.lab``: measures in the plane and Sinkhorn Transformers trained on coupling systems.
- ``engine.serving``: the Ray Serve deployment (schemas, routes, runtime), the client, the wire.
- ``engine.io``: exports and file formats, the command line, benchmark helpers.

``engine.types``, ``engine.settings`` and ``engine.errors`` are shared by all of them.

Names load on first use (PEP 562), so the torch-free parts (``engine.types``,
``engine.settings``, ``engine.relation.summary``, ``engine.solver.references``,
``engine.io.export``, ``engine.serving.client``) import without torch: the figures
(``viz``) and the HTTP client read them. Importing ``engine`` has no side effects.
"""

from __future__ import annotations

from ._lazy import exports

_WHERE = {
    "ModelError": "errors", "SettingsError": "errors", "SinkscopeError": "errors",
    "TextError": "errors",
    "Coupling": "types", "Encoding": "types", "History": "types", "Notice": "types",
    "Projection": "types", "Relation": "types", "Summary": "types", "Ranking": "types",
    "sinkhorn": "solver.core", "softmax_attention": "solver.core",
    "partial": "solver.core",
    "Encoder": "models.encoder", "allowed_models": "models.encoder",
    "project": "relation.projection", "rank_texts": "relation.sentences",
    "encode_texts": "relation.relate", "eps_path": "relation.relate",
    "relate": "relation.relate", "relate_encodings": "relation.relate",
    "Lattice": "relation.lattice", "relation_lattice": "relation.lattice",
    "align": "alignment.api", "align_pairs": "alignment.api", "tune": "alignment.api",
    "score": "alignment.score", "Alignment": "alignment.api", "Tuning": "alignment.api",
    "CorpusScore": "alignment.score", "Pair": "alignment.readers", "read_pairs": "alignment.readers",
}
__all__ = sorted(_WHERE)

__getattr__, __dir__ = exports(__name__, _WHERE)
