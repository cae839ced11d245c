"""The engine as a service, in one import: a Ray Serve deployment behind a versioned HTTP
API. The parts live in their own modules:

- :mod:`engine.serving.schemas`: request and response models (OpenAPI at ``/v1/openapi.json``);
- :mod:`engine.serving.routes`: the FastAPI app, the error shape, the body-size limit;
- :mod:`engine.serving.answers`: what each endpoint computes (pure functions);
- :mod:`engine.serving.cache`: the replica's encodings (LRU);
- :mod:`engine.serving.deployment`: the Serve deployment (models, batching, the app);
- :mod:`engine.serving.runtime`: a local Ray instance, starting and stopping the app.

HTTP API (docs/serving.md): ``GET /v1/health``, ``GET /v1/models``, ``GET /v1/stats``,
``POST /v1/relate``, ``POST /v1/eps_path``, ``POST /v1/lattice``, ``POST /v1/rank``.
Run it with ``python -m engine serve`` (a local Ray instance, loopback) or, on a cluster,
``serve deploy deploy/serve.yaml`` (``import_path: engine.serving.deployment:app``).
"""

from .deployment import TUNING, Engine, app, build  # noqa: F401
from .routes import ENDPOINTS, build_api, openapi  # noqa: F401
from .runtime import APP_NAME, RAY_THROUGHPUT, deploy, local_ray, start, stop  # noqa: F401
