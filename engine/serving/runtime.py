"""Ray for the served engine on one machine: a local instance with Serve's throughput
settings, every listener on 127.0.0.1, and starting, updating and stopping the
application on it; and what each replica sets up in its own process.

``python -m engine serve`` uses these; a cluster runs ``serve deploy deploy/serve.yaml``
instead (Ray started with :data:`RAY_THROUGHPUT` in its environment).
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import logging
import os
from typing import Iterator

APP_NAME = "sinkscope"
LOOPBACK = "127.0.0.1"
# Serve's own timeout per HTTP request (408 from its proxy), on top of the replica's
# deadline (settings.CONFIG.serve_deadline_s, counted once for the wait for a heavy slot
# and once for the computation) and time to send a large answer.
TIMEOUT_MARGIN_S = 60.0

# Ray Serve's own throughput settings (the ones its RAY_SERVE_THROUGHPUT_OPTIMIZED switch
# sets, less direct ingress, which would drop the proxy, and less gRPC from proxy to
# replica): user code on the replica's own event loop, buffered request logs. Read by every
# Ray process when it starts, so set before Ray starts (on a cluster: in the environment
# of ``ray start``); a value already set wins. The proxy reaches replicas by Ray's actor
# calls, Serve's default: gRPC there (RAY_SERVE_USE_GRPC_BY_DEFAULT=1) capped a message at
# 4 MiB (the largest answers the API allows: 32 MiB, SINKSCOPE_SERVE_MAX_ANSWER) and, its cap
# lifted, gave 0.66–1.18× the slider moves per second of the actor calls in four runs here
# (``python -m benchmarks.service``); if an operator turns it on, the cap stays lifted.
RAY_THROUGHPUT = {"RAY_SERVE_RUN_USER_CODE_IN_SEPARATE_THREAD": "0",
                  "RAY_SERVE_REPLICA_GRPC_MAX_MESSAGE_LENGTH": str(2**31 - 1),
                  "RAY_SERVE_RUN_ROUTER_IN_SEPARATE_LOOP": "0",
                  "RAY_SERVE_REQUEST_PATH_LOG_BUFFER_SIZE": "1000",
                  "RAY_SERVE_LOG_TO_STDERR": "0"}
# How long Serve's controller waits for a new proxy to say it is ready (5 s by default, then
# it kills the proxy and serve.start fails) and for a health check: a proxy's first start
# imports Serve's HTTP stack, which took longer than 5 s on a loaded 2-core machine.
RAY_PATIENCE = {"RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S": "60",
                "RAY_SERVE_PROXY_HEALTH_CHECK_TIMEOUT_S": "30"}


@contextlib.contextmanager
def local_ray(num_cpus: int | None = None) -> Iterator[None]:
    """A local Ray instance for this process (``num_cpus`` for the replicas, and room for
    the engine's jobs on top: :func:`job_cpus`): every listener on 127.0.0.1 (GCS, raylet,
    object and node managers, workers, agents; the replicas' own gRPC servers through
    :func:`replica_setup`), no dashboard, worker logs kept in Ray's log folder, token
    authentication off (nothing listens beyond this machine), Serve's throughput settings
    (:data:`RAY_THROUGHPUT`) and patience with a slow proxy start (:data:`RAY_PATIENCE`);
    Serve and Ray shut down after, whatever happens inside."""
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    # Ray turns a node address of 127.0.0.1 into the machine's own address unless it
    # runs as on a laptop (this switch); only with 127.0.0.1 kept do its servers bind
    # to loopback instead of all interfaces.
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    for name, value in {**RAY_THROUGHPUT, **RAY_PATIENCE}.items():
        os.environ.setdefault(name, value)
    import ray
    from ray import serve
    from ray._private import ray_constants

    ray_constants.ENABLE_RAY_CLUSTER = False  # (read at import: ray may be imported already)
    # address "local": always a new instance, never one found on the machine (ray.init()
    # would join the cluster a `ray start` or a test cluster recorded in Ray's temp folder)
    ray.init(address="local", num_cpus=(num_cpus or max(2, os.cpu_count() or 2)) + job_cpus(),
             include_dashboard=False, log_to_driver=False, configure_logging=False,
             _node_ip_address=LOOPBACK)
    try:
        yield
    finally:
        with contextlib.suppress(Exception):
            serve.shutdown()
        ray.shutdown()


def job_cpus() -> float:
    """CPUs a local instance adds for the engine's jobs (``engine.jobs.served``): what the
    jobs running at once ask for (``SINKSCOPE_HEAVY_JOBS`` × ``SINKSCOPE_JOB_CPUS``), so
    a job can start beside replicas that hold every core's CPU."""
    from .. import settings

    c = settings.CONFIG
    return max(0, int(-(-c.heavy_jobs * c.job_cpus // 1)))


def start(application=None, *, host: str = "127.0.0.1", port: int = 8000) -> str:
    """Start Serve's HTTP proxy on host:port and run the application (on the Ray instance
    of this process); returns the base URL once every replica is ready. Serve answers 408
    to a request still running after :func:`request_timeout_s`."""
    from ray import serve

    serve.start(http_options={"host": host, "port": port,
                              "request_timeout_s": request_timeout_s()})
    deploy(application)
    shown = "127.0.0.1" if host in ("0.0.0.0", "") else host
    return f"http://{shown}:{port}"


def deploy(application=None) -> None:
    """Deploy (or update) the application on the running Serve (its replicas start
    anew; ``serve deploy`` of deploy/serve.yaml changes a ``user_config`` in place)."""
    from ray import serve

    from .deployment import build

    serve.run(application if application is not None else build(), name=APP_NAME,
              route_prefix="/")


def stop(timeout_s: float = 120.0) -> None:
    """Stop Serve (proxy, controller, replicas) and wait until its actors are gone; the Ray
    instance stays.

    ``serve.shutdown`` gives up waiting after 30 s while the controller may still be
    stopping (a loaded machine); a :func:`start` then would meet that controller, which
    goes on to kill the new proxy. So this waits, up to ``timeout_s``, until no actor of
    Serve's namespace is alive.
    """
    import time

    import ray
    from ray import serve

    serve.shutdown()
    end = time.monotonic() + timeout_s
    while time.monotonic() < end and any(
            a.get("namespace") == "serve"
            for a in ray.util.list_named_actors(all_namespaces=True)):
        time.sleep(0.2)


def request_timeout_s() -> float:
    """Serve's end-to-end timeout per HTTP request: twice the replica's deadline (the wait
    for a heavy slot, then the computation) and :data:`TIMEOUT_MARGIN_S` to send."""
    from .. import settings

    return 2 * settings.CONFIG.serve_deadline_s + TIMEOUT_MARGIN_S


def replica_setup() -> None:
    """What a replica sets in its own process before it serves: glibc gives large blocks
    back when they are freed (allocations from 64 KiB up are mmapped, in every thread:
    without it a worker thread's arena kept ~3× the memory of the same work on the main
    thread), and on a node whose address is loopback (:func:`local_ray`), Serve's
    replica-to-proxy gRPC server listens on 127.0.0.1 too (Serve binds it to all
    interfaces, ``[::]:0``)."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(-3, 65536)  # M_MMAP_THRESHOLD
    try:
        import ray
        from ray.serve._private import replica

        if not ray.is_initialized() or ray.util.get_node_ip_address() != LOOPBACK:
            return
        add = replica.add_port_to_grpc_server
        if getattr(add, "loopback", False):
            return

        def loopback(server, address):
            return add(server, f"{LOOPBACK}:0" if address == "[::]:0" else address)

        loopback.loopback = True
        replica.add_port_to_grpc_server = loopback
    except Exception:  # another Ray: its listeners stay as they are (tests check them)
        logging.getLogger("ray.serve.sinkscope").warning(
            "could not bind the replica's gRPC server to loopback", exc_info=True)


def trim_memory() -> None:
    """Give freed heap memory back to the system (after a large answer)."""
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)


@functools.lru_cache(maxsize=1)
def _libc():
    """glibc, or None elsewhere."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        libc.mallopt, libc.malloc_trim  # noqa: B018  (glibc has both)
        return libc
    except (OSError, AttributeError):
        return None
