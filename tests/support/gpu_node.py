"""A second node with a GPU (declared, not real) on this process's Ray instance, for as long
as a ``with`` block runs: what tests/test_service.py places a GPU job on, beside its
service, without a cluster of its own (a second Ray head cost ~16 s of CPU here).

Serve starts a proxy only where a replica runs (and on its controller's node), so a node
that lives while no deployment changes gets none: the service's replicas stay where they
were.
"""

from __future__ import annotations

import contextlib
import time
from typing import Iterator

WAIT_S = 60.0


@contextlib.contextmanager
def gpu_node(num_cpus: int = 1) -> Iterator[str]:
    """Start a node (``num_cpus`` CPUs, one GPU) joined to the running Ray instance, on
    127.0.0.1; yields its node id once Ray lists it alive; its processes are killed after,
    whatever happens inside."""
    import ray
    from ray._private.node import Node
    from ray._private.parameter import RayParams

    params = RayParams(num_cpus=num_cpus, num_gpus=1, node_ip_address="127.0.0.1",
                       gcs_address=ray.get_runtime_context().gcs_address,
                       include_log_monitor=False, node_manager_port=0,  # one per machine
                       object_store_memory=150 * 2**20, min_worker_port=0, max_worker_port=0)
    params.dashboard_agent_listen_port = None  # a free one, not the head's
    node = Node(params, head=False, shutdown_at_exit=True, spawn_reaper=True)
    try:
        end = time.monotonic() + WAIT_S
        while not any(n["NodeID"] == node.node_id and n["Alive"] for n in ray.nodes()):
            if time.monotonic() > end:
                raise TimeoutError(f"the GPU node did not join within {WAIT_S:.0f} s")
            time.sleep(0.05)
        yield node.node_id
    finally:
        node.kill_all_processes(check_alive=False, allow_graceful=True, wait=True)
