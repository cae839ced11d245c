"""Ray for the served engine on one machine: a local instance with Serve's throughput
settings, and starting, updating and stopping the application on it.

``python -m engine serve`` uses these; a cluster runs ``serve deploy deploy/serve.yaml``
instead (Ray started with :data:`RAY_THROUGHPUT` in its environment).
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

APP_NAME = "sinkscope"

# Ray Serve's own throughput settings (the ones its RAY_SERVE_THROUGHPUT_OPTIMIZED switch
# sets, less direct ingress, which would drop the proxy): user code on the replica's own
# event loop, gRPC from proxy to replica, buffered request logs. Measured here with 16
# clients and 0.24 MB answers: 1.6× the requests per second. Read by every Ray process
# when it starts, so set before Ray starts (on a cluster: in the environment of
# ``ray start``); a value already set wins.
RAY_THROUGHPUT = {"RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0",
                  "RAY_SERVE_USE_GRPC_BY_DEFAULT": "1",
                  "RAY_SERVE_RUN_ROUTER_IN_SEPARATE_LOOP": "0",
                  "RAY_SERVE_REQUEST_PATH_LOG_BUFFER_SIZE": "1000",
                  "RAY_SERVE_LOG_TO_STDERR": "0"}


@contextlib.contextmanager
def local_ray(num_cpus: int | None = None) -> Iterator[None]:
    """A local Ray instance for this process: no dashboard, worker logs kept in Ray's log
    folder, token authentication off (it listens on this machine only), Serve's
    throughput settings (:data:`RAY_THROUGHPUT`); Serve and Ray shut down after, whatever
    happens inside."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    for name, value in RAY_THROUGHPUT.items():
        os.environ.setdefault(name, value)
    import ray
    from ray import serve

    ray.init(num_cpus=num_cpus or max(2, os.cpu_count() or 2), include_dashboard=False,
             log_to_driver=False, configure_logging=False)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            serve.shutdown()
        ray.shutdown()


def start(application=None, *, host: str = "127.0.0.1", port: int = 8000) -> str:
    """Start Serve's HTTP proxy on host:port and run the application (on the Ray instance
    of this process); returns the base URL once every replica is ready."""
    from ray import serve

    serve.start(http_options={"host": host, "port": port})
    deploy(application)
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    return f"http://{shown}:{port}"


def deploy(application=None) -> None:
    """Deploy (or update in place) the application on the running Serve; a change of
    ``user_config`` only reconfigures the replicas, which keep their models and caches."""
    from ray import serve

    from .deployment import build

    serve.run(application if application is not None else build(), name=APP_NAME,
              route_prefix="/")


def stop() -> None:
    """Stop Serve (proxy, controller, replicas); the Ray instance stays."""
    from ray import serve

    serve.shutdown()
