"""Every launch path in infra/ gives every node the provider keys, from outside the repo (infra/README.md)."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import yaml

from apiflow.redact import is_secret_name

INFRA = Path(__file__).resolve().parents[2] / "infra"
CONFIGS = INFRA.parent / "configs"
KEYS_FILE = "~/apiflow-secrets/provider-keys.env"
SECRET = "apiflow-provider-keys"
FAKE_KEY = "sk-launcher-3c9e1f7a5b2d8e40"


def _launcher() -> dict:
    return yaml.safe_load((INFRA / "ray-cluster.yaml").read_text())


def _job() -> dict:
    return yaml.safe_load((INFRA / "rayjob.yaml").read_text())


def _start_lines(config: dict) -> list[str]:
    lines = config["head_start_ray_commands"] + config["worker_start_ray_commands"]
    return [line for line in lines if "ray start" in line]


def test_the_launcher_mounts_the_keys_folder_from_outside_the_repo_on_every_node():
    config = _launcher()
    mounts = config["file_mounts"]
    assert mounts == {"~/apiflow-secrets": "~/.apiflow/secrets"}  # a folder in the user's home, not the clone
    head, worker = config["head_start_ray_commands"], config["worker_start_ray_commands"]
    assert [line for line in head if "ray start" in line] and [line for line in worker if "ray start" in line]
    for line in _start_lines(config):  # sourced in the same && chain as `ray start`: no keys, no start
        assert f"set -a && . {KEYS_FILE} && set +a && ray start" in line, line


def test_ray_accepts_the_launcher_config():
    from ray.autoscaler._private.util import prepare_config, validate_config

    validate_config(prepare_config(_launcher()))


def _run_start(line: str, home: Path) -> subprocess.CompletedProcess[str]:
    """A start command as the launcher runs it, with `ray start …` replaced by a print of what it would see."""
    probe = 'python3 -c \'import os; print("KEY=" + os.environ.get("OPENAI_API_KEY", ""))\''
    command = re.sub(r"ray start.*$", probe, line)
    return subprocess.run(["bash", "-c", command], env={"HOME": str(home), "PATH": "/usr/bin:/bin"},
                          capture_output=True, text=True, check=False)  # fmt: skip


def test_each_start_command_hands_the_files_keys_to_ray_start_and_refuses_without_it(tmp_path):
    for line in _start_lines(_launcher()):
        missing = _run_start(line, tmp_path)
        assert missing.returncode != 0 and "KEY=" not in missing.stdout  # no file: ray start never runs
    (tmp_path / "apiflow-secrets").mkdir()
    (tmp_path / "apiflow-secrets" / "provider-keys.env").write_text(f"OPENAI_API_KEY={FAKE_KEY}\n")
    for line in _start_lines(_launcher()):
        assert _run_start(line, tmp_path).stdout.splitlines()[-1] == f"KEY={FAKE_KEY}", line


def test_the_head_shell_sources_the_same_file_for_ray_submit():
    (line,) = _launcher()["head_setup_commands"]
    assert f". {KEYS_FILE}" in shlex.split(line.split("echo", 1)[1])[0] and ">> ~/.bashrc" in line


def test_kuberay_pods_all_read_the_secret():
    cluster = _job()["spec"]["rayClusterSpec"]
    groups = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
    for group in groups:
        for container in group["template"]["spec"]["containers"]:
            assert {"secretRef": {"name": SECRET, "optional": False}} in container.get("envFrom", []), group


def _secret_values(node, path="") -> list[str]:
    """Credential-named keys with a literal value anywhere in a parsed YAML document."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if is_secret_name(str(key)) and isinstance(value, str | int) and str(value):
                found.append(f"{path}.{key}")
            found += _secret_values(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _secret_values(value, f"{path}[{i}]")
    return found


def test_no_key_in_a_runtime_env_the_image_or_a_committed_launch_file():
    job = _job()
    runtime_env = yaml.safe_load(job["spec"]["runtimeEnvYAML"])
    assert not [name for name in runtime_env.get("env_vars", {}) if is_secret_name(name)]  # dashboard-visible
    assert _secret_values(job) == [] and _secret_values(_launcher()) == []
    for line in (INFRA / "Dockerfile").read_text().splitlines():
        words = line.split()
        if words and words[0] in ("ENV", "ARG"):
            assert not [w for w in words[1:] if is_secret_name(w.split("=")[0])], line
    key_like = re.compile(  # an sk- key, an AWS key id, or a credential-named variable set to a key-like value
        r"\bsk-[A-Za-z0-9_-]{16,}|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b|\b[A-Z_]*(?:KEY|TOKEN|SECRET)[A-Z_]*=[\w./+-]{8,}"
    )
    texts = [p for p in [*INFRA.rglob("*"), *CONFIGS.rglob("*")] if p.suffix in (".yaml", ".json", ".md", "")]
    for path in sorted(p for p in texts if p.is_file()):
        assert not key_like.search(path.read_text()), path
    for grid in sorted((CONFIGS / "grids").glob("*.yaml")):  # a grid's params.api_key would travel with it
        assert _secret_values(yaml.safe_load(grid.read_text())) == [], grid
