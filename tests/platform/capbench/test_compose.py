"""docker/compose.yaml is the deployment (issue 16). No container engine runs on this machine, so the
file is checked against the Compose specification's JSON schema (docker/compose-spec.json) and
against what the platform needs: every part present, one beat, the migration before anything else,
a GPU reservation on the gpu queue's worker, health checks, named volumes, and only configuration
variables the code declares."""

from __future__ import annotations

import copy
import json
import re
import shlex
from pathlib import Path

import jsonschema
import pytest
import yaml

from capbench.settings.variables import Platform
from capbench_eval import config
from scoring.queues import KINDS

ROOT = Path(__file__).resolve().parents[3]
LONG_RUNNING = ("postgres", "valkey", "minio", "web", "worker-cpu", "worker-api", "worker-gpu", "beat")


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((ROOT / "docker" / "compose.yaml").read_text())


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(json.loads((ROOT / "docker" / "compose-spec.json").read_text()))


def _errors(validator, document) -> list[str]:
    return [f"{error.json_path}: {error.message}" for error in validator.iter_errors(document)]


def test_the_file_follows_the_compose_specification(compose, validator):
    assert _errors(validator, compose) == []
    # The schema can say no: a misspelt key and a wrong type are both refused.
    broken = copy.deepcopy(compose)
    broken["services"]["web"]["healthchek"] = broken["services"]["web"].pop("healthcheck")
    broken["services"]["beat"]["depends_on"] = "migrate"
    assert len(_errors(validator, broken)) >= 2


def _command(service: dict) -> str:
    command = service.get("command", "")
    return command if isinstance(command, str) else shlex.join(command)


def test_every_part_of_the_platform_is_there_and_starts_in_order(compose):
    services = compose["services"]
    assert set(services) >= {*LONG_RUNNING, "migrate", "minio-bucket"}
    for name in LONG_RUNNING:
        assert "healthcheck" in services[name], f"{name} has no health check"
        assert services[name].get("restart") == "unless-stopped", name
    # Workers by queue: each of the platform's queues has exactly one kind of worker.
    queues = {name: re.search(r"--queues (\S+)", _command(s)) for name, s in services.items() if "worker" in name}
    assert sorted(match.group(1) for match in queues.values() if match) == sorted(KINDS)
    assert "--queues gpu" in _command(services["worker-gpu"])
    devices = services["worker-gpu"]["deploy"]["resources"]["reservations"]["devices"]
    assert devices[0]["driver"] == "nvidia"
    assert "gpu" in devices[0]["capabilities"]
    # One beat in the whole deployment (the sweep holds an advisory lock, but one is the design).
    assert [name for name, s in services.items() if " beat" in f" {_command(s)}"] == ["beat"]
    # The schema is migrated once, before web and workers; they also wait for the store's bucket.
    assert "migrate" in _command(services["migrate"])
    assert services["migrate"]["restart"] == "no"
    for name in ("web", "worker-cpu", "worker-api", "worker-gpu", "beat"):
        needs = services[name]["depends_on"]
        assert needs["migrate"]["condition"] == "service_completed_successfully", name
        assert needs["minio-bucket"]["condition"] == "service_completed_successfully", name
        assert needs["postgres"]["condition"] == needs["valkey"]["condition"] == "service_healthy", name
    assert "gunicorn" in _command(services["web"])
    assert "/healthz" in str(services["web"]["healthcheck"]["test"])


def test_volumes_are_named_and_stored_files_go_to_the_object_store(compose):
    services, declared = compose["services"], set(compose["volumes"])
    used = set()
    for service in services.values():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if not source.startswith((".", "/")):
                used.add(source)
    assert used == declared, (used, declared)
    assert {"pgdata", "valkeydata", "miniodata"} <= declared
    for name in ("web", "worker-cpu", "worker-api", "worker-gpu", "beat"):
        environment = services[name]["environment"]
        assert environment["CAPBENCH_S3_ENDPOINT_URL"] == "http://minio:9000", name
        assert environment["CAPBENCH_S3_BUCKET"] == "capbench", name
        assert environment["DJANGO_SETTINGS_MODULE"] == "capbench.settings.production", name


def test_only_declared_configuration_is_set(compose):
    names = {key for service in compose["services"].values() for key in service.get("environment", {}) or {}}
    capbench = {name for name in names if name.startswith("CAPBENCH_")}
    declared = {item.name for item in [*config.Library.variables(), *Platform.variables()]}
    undeclared = capbench - declared
    assert not undeclared, f"set in compose.yaml but read nowhere: {sorted(undeclared)}"
