"""A job asking for a GPU runs only on a node that declares one: a two-node Ray cluster on
this CPU machine (ray.cluster_utils.Cluster, every listener on 127.0.0.1), a head with no
GPU and a node with ``num_gpus=1``; the served engine's board (engine.jobs.served) with
jobs asking for one GPU. Ray gives the task that node's GPU 0 (torch sees no CUDA:
the GPU is declared, not real). The cluster is stopped whatever happens."""

from __future__ import annotations

import time

import pytest

from engine.jobs import spec

pytestmark = [pytest.mark.service, pytest.mark.slow]
BODY = {"kind": "lab_train", "settings": {"models": ["softmax"], "steps": 5, "train_pairs": 8,
                                          "heldout_pairs": 4, "width": 2, "depth": 0}}


@pytest.fixture(scope="module")
def cluster(ray_lock):
    """(the cluster, the GPU node's id), on loopback; shut down after the module."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RAY_AUTH_MODE", "disabled")
        mp.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        import ray
        from ray.cluster_utils import Cluster

        c = Cluster(initialize_head=True, head_node_args={
            "num_cpus": 1, "num_gpus": 0, "include_dashboard": False,
            "node_ip_address": "127.0.0.1"})
        try:
            gpu = c.add_node(num_cpus=1, num_gpus=1, node_ip_address="127.0.0.1")
            ray.init(address=c.address, log_to_driver=False, _node_ip_address="127.0.0.1")
            c.wait_for_nodes()
            yield c, gpu.node_id
        finally:
            ray.shutdown()
            c.shutdown()


def test_a_job_asking_for_a_gpu_runs_on_the_gpu_node_only(cluster):
    import ray

    from engine.jobs.served import Jobs, resources

    _, gpu_node = cluster
    assert resources()["num_gpus"] == 1.0  # "auto": the cluster has a GPU
    board = Jobs(resources={"num_cpus": 1, "num_gpus": 1}).board()
    sp = spec.check(BODY)
    ids = [ray.get(board.submit.remote(sp.kind, sp.body))["id"] for _ in range(2)]
    end = time.monotonic() + 180
    for job_id in ids:
        while (st := ray.get(board.status.remote(job_id)))["state"] in ("waiting", "running"):
            assert time.monotonic() < end, st
            time.sleep(0.1)
        assert st["state"] == "done", st
        assert st["resources"] == {"num_cpus": 1, "num_gpus": 1}
        assert st["worker"]["node"] == gpu_node and st["worker"]["gpus"] == ["0"]
    nodes = {n["NodeID"]: n["Resources"].get("GPU", 0) for n in ray.nodes()}
    assert nodes[gpu_node] == 1 and sorted(nodes.values()) == [0, 1]
