"""packaging/k8s/ holds together without a cluster: the ConfigMap's warren.toml is a valid config
whose plugins load; the Deployment runs it, probes /healthz and /readyz on the port the config
listens on, drains (preStop sleep, then SIGTERM) within a grace period longer than the sleep plus
shutdown_timeout, and mounts the broker password where the config reads it; KEDA's ScaledObject
scales that Deployment on a queue its worker consumes, with credentials from a Secret that
exists. Every reference between the manifests resolves."""

import re
import tomllib
from pathlib import Path
from typing import Any, Dict, List

import pytest
import yaml

from warren_testkit import env, require_services, warren_cli


def manifests_dir() -> Path:
    return Path(env("WARREN_SOURCE_DIR")) / "packaging" / "k8s"


@pytest.fixture(scope="module")
def objects() -> Dict[str, Dict[str, Any]]:
    """Every object of the kustomization, keyed "Kind/name"."""
    kustomization = yaml.safe_load((manifests_dir() / "kustomization.yaml").read_text())
    found: Dict[str, Dict[str, Any]] = {}
    for resource in kustomization["resources"]:
        for document in yaml.safe_load_all((manifests_dir() / resource).read_text()):
            key = f"{document['kind']}/{document['metadata']['name']}"
            assert key not in found, f"{key} defined twice"
            found[key] = document
    listed = set(kustomization["resources"])
    on_disk = {p.name for p in manifests_dir().glob("*.yaml")} - {"kustomization.yaml"}
    assert listed == on_disk, f"kustomization.yaml lists {sorted(listed)}, the folder has {sorted(on_disk)}"
    return found


def container(objects) -> Dict[str, Any]:
    [only] = objects["Deployment/warren-emails"]["spec"]["template"]["spec"]["containers"]
    return only


def config_text(objects) -> str:
    return objects["ConfigMap/warren-emails"]["data"]["warren.toml"]


def config(objects) -> Dict[str, Any]:
    return tomllib.loads(config_text(objects))


def duration_seconds(text: str) -> float:
    number, unit = re.fullmatch(r"(\d+)(ms|s|m)", text).groups()
    return int(number) * {"ms": 0.001, "s": 1, "m": 60}[unit]


def mount_path_of(objects, file_path: str) -> Dict[str, Any]:
    """The volume mount that holds FILE_PATH, and its volume."""
    mounts = [m for m in container(objects)["volumeMounts"]
              if file_path.startswith(m["mountPath"].rstrip("/") + "/")]
    assert mounts, f"nothing is mounted where {file_path} is"
    mount = max(mounts, key=lambda m: len(m["mountPath"]))
    volumes = objects["Deployment/warren-emails"]["spec"]["template"]["spec"]["volumes"]
    [volume] = [v for v in volumes if v["name"] == mount["name"]]
    return {"mount": mount, "volume": volume,
            "relative": file_path[len(mount["mountPath"].rstrip("/")) + 1:]}


def test_ConfigMapConfig_IsValidAndItsPluginsLoad(objects, tmp_path):
    require_services("warren")
    path = tmp_path / "warren.toml"
    path.write_text(config_text(objects))
    password = {"WARREN_BROKER_PASSWORD": "unused"}  # the file is only on the pod

    topology = warren_cli("topology", "apply", "--dry-run", "-c", str(path), env_overrides=password)
    plugins = warren_cli("plugins", "-c", str(path), "--plugin-dir", env("WARREN_PLUGIN_DIR"),
                         env_overrides=password)

    assert topology.returncode == 0, topology.stderr
    assert plugins.returncode == 0, plugins.stdout + plugins.stderr


def test_Deployment_RunsTheConfigMapsConfig(objects):
    args = container(objects)["args"]
    assert args[:2] == ["run", "-c"]
    where = mount_path_of(objects, args[2])
    assert where["volume"]["configMap"]["name"] == "warren-emails"
    assert where["relative"] in objects["ConfigMap/warren-emails"]["data"]


def test_Deployment_ProbesHealthzAndReadyzOnThePortTheConfigListensOn(objects):
    listen = config(objects)["metrics"]["listen"]
    host, port = listen.rsplit(":", 1)
    assert host == "0.0.0.0", "the kubelet probes the pod's IP, not loopback"
    ports = {p["name"]: p["containerPort"] for p in container(objects)["ports"]}
    live, ready = container(objects)["livenessProbe"], container(objects)["readinessProbe"]
    assert live["httpGet"]["path"] == "/healthz"
    assert ready["httpGet"]["path"] == "/readyz"
    for probe in (live, ready):
        assert ports[probe["httpGet"]["port"]] == int(port)


def test_Deployment_DrainsWithinAGracePeriodLongerThanPreStopPlusShutdownTimeout(objects):
    pod = objects["Deployment/warren-emails"]["spec"]["template"]["spec"]
    command = container(objects)["lifecycle"]["preStop"]["exec"]["command"]
    assert command[0] == "/bin/sleep"
    pre_stop = int(command[1])
    shutdown_timeout = duration_seconds(config(objects)["host"]["shutdown_timeout"])

    assert pre_stop >= 2, "endpoints need a moment to drop the pod before SIGTERM"
    assert pod["terminationGracePeriodSeconds"] > pre_stop + shutdown_timeout


def test_BrokerPassword_IsTheSecretMountedWhereTheConfigReadsIt(objects):
    password_file = config(objects)["broker"]["password_file"]
    where = mount_path_of(objects, password_file)
    secret_volume = where["volume"]["secret"]
    secret = objects[f"Secret/{secret_volume['secretName']}"]
    [item] = [i for i in secret_volume["items"] if i["path"] == where["relative"]]
    assert item["key"] in secret["stringData"]
    assert where["mount"]["readOnly"] is True


def test_ScaledObject_ScalesTheDeploymentOnAQueueItsWorkerConsumes(objects):
    scaled = objects["ScaledObject/warren-emails"]["spec"]
    assert scaled["scaleTargetRef"]["name"] == "warren-emails"
    assert f"Deployment/{scaled['scaleTargetRef']['name']}" in objects
    [trigger] = scaled["triggers"]
    assert trigger["type"] == "rabbitmq"
    assert trigger["metadata"]["mode"] == "QueueLength"
    consumed = {worker["queue"] for worker in config(objects)["workers"]}
    assert trigger["metadata"]["queueName"] in consumed
    assert 1 <= scaled["minReplicaCount"] <= scaled["maxReplicaCount"]

    authentication = objects[f"TriggerAuthentication/{trigger['authenticationRef']['name']}"]
    [reference] = authentication["spec"]["secretTargetRef"]
    assert reference["parameter"] == "host"
    assert reference["key"] in objects[f"Secret/{reference['name']}"]["stringData"]


def test_Secrets_HoldOnlyPlaceholders(objects):
    secrets: List[Dict[str, Any]] = [o for k, o in objects.items() if k.startswith("Secret/")]
    assert secrets
    for secret in secrets:
        for key, value in secret["stringData"].items():
            assert "change-me" in value, f"{secret['metadata']['name']}.{key} looks like a real secret"
