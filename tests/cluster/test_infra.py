"""infra/: the launcher YAML, the RayJob manifest and the Dockerfile are valid and agree (not deployed here)."""

import re
from pathlib import Path

import yaml

INFRA = Path(__file__).resolve().parents[2] / "infra"


def test_cluster_launcher_yaml_has_the_launcher_keys():
    config = yaml.safe_load((INFRA / "ray-cluster.yaml").read_text())
    for key in ("cluster_name", "max_workers", "provider", "auth", "available_node_types", "head_node_type",
                "head_start_ray_commands", "worker_start_ray_commands"):  # fmt: skip
        assert key in config, key
    assert config["head_node_type"] in config["available_node_types"]
    assert config["provider"]["type"]


def test_rayjob_manifest_runs_the_driver_on_the_leaderboard_grid():
    job = yaml.safe_load((INFRA / "rayjob.yaml").read_text())
    assert job["apiVersion"] == "ray.io/v1" and job["kind"] == "RayJob"
    spec = job["spec"]
    assert spec["entrypoint"].startswith("python -m cluster.driver configs/grids/leaderboard.yaml")
    assert spec["submissionMode"] in ("HTTPMode", "K8sJobMode", "SidecarMode")
    assert spec["shutdownAfterJobFinishes"] is True and spec["activeDeadlineSeconds"] > 0
    yaml.safe_load(spec["runtimeEnvYAML"])
    cluster = spec["rayClusterSpec"]
    assert cluster["headGroupSpec"]["template"]["spec"]["containers"]
    assert cluster["workerGroupSpecs"][0]["template"]["spec"]["containers"]


def test_one_image_everywhere_and_ray_versions_agree():
    dockerfile = (INFRA / "Dockerfile").read_text()
    base = re.search(r"^FROM rayproject/ray:(\S+)", dockerfile, re.M)
    assert base is not None
    pyproject = (INFRA.parent / "pyproject.toml").read_text()
    pinned = re.search(r'"ray\[default\]==([\d.]+)"', pyproject).group(1)
    assert base.group(1).startswith(pinned)
    job = yaml.safe_load((INFRA / "rayjob.yaml").read_text())
    launcher = yaml.safe_load((INFRA / "ray-cluster.yaml").read_text())
    assert job["spec"]["rayClusterSpec"]["rayVersion"] == pinned
    images = {c["image"] for g in [job["spec"]["rayClusterSpec"]["headGroupSpec"], *job["spec"]["rayClusterSpec"]["workerGroupSpecs"]]
              for c in g["template"]["spec"]["containers"]}  # fmt: skip
    assert images == {launcher["docker"]["image"]}
