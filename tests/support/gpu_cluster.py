"""A GPU job's placement on a two-node Ray cluster, in a process of its own:
``python -m tests.support.gpu_cluster`` starts a cluster on loopback
(ray.cluster_utils.Cluster: a head with no GPU, a node with ``num_gpus=1``, declared, not
real), submits two jobs asking for one GPU to the served engine's board
(engine.jobs.served), waits for them, shuts the cluster down whatever happens and prints
one JSON document: ``auto_gpus`` (what ``resources()`` asks for on this cluster),
``gpu_node``, ``jobs`` (each job's last status) and ``nodes`` (node id → GPUs).

tests/test_service.py starts it just before its own Ray, which runs beside it; a process of
its own keeps the two apart (one Ray per process).
"""

from __future__ import annotations

import json
import os
import time

BODY = {"kind": "lab_train", "settings": {"models": ["softmax"], "steps": 5, "train_pairs": 8,
                                          "heldout_pairs": 4, "width": 2, "depth": 0}}
WAIT_S = 180.0


def main() -> None:
    os.environ["RAY_AUTH_MODE"] = "disabled"
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    import ray
    from ray.cluster_utils import Cluster

    from engine.jobs import spec
    from engine.jobs.served import Jobs, resources

    c = Cluster(initialize_head=True, head_node_args={
        "num_cpus": 1, "num_gpus": 0, "include_dashboard": False,
        "node_ip_address": "127.0.0.1"})
    try:
        gpu = c.add_node(num_cpus=1, num_gpus=1, node_ip_address="127.0.0.1")
        ray.init(address=c.address, log_to_driver=False, _node_ip_address="127.0.0.1")
        c.wait_for_nodes()
        auto = resources()["num_gpus"]
        board = Jobs(resources={"num_cpus": 1, "num_gpus": 1}).board()
        sp = spec.check(BODY)
        ids = [ray.get(board.submit.remote(sp.kind, sp.body))["id"] for _ in range(2)]
        end, jobs = time.monotonic() + WAIT_S, []
        for job_id in ids:
            while (st := ray.get(board.status.remote(job_id)))["state"] in ("waiting",
                                                                             "running"):
                if time.monotonic() > end:
                    break
                time.sleep(0.1)
            jobs.append(st)
        nodes = {n["NodeID"]: n["Resources"].get("GPU", 0) for n in ray.nodes()}
    finally:
        ray.shutdown()
        c.shutdown()
    print(json.dumps({"auto_gpus": auto, "gpu_node": gpu.node_id, "jobs": jobs,
                      "nodes": nodes}, default=str))


if __name__ == "__main__":
    main()
