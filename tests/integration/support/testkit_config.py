"""warren.toml for integration tests, written from Python values, pointing at the test broker.

Tests describe exchanges, queues and workers as dicts (the keys are warren.toml's own, see
conf/warren.toml) and get TOML text back, so a test reads like the config it runs:

    text = warren_config(
        queues=[{"name": queue, "type": "classic"}],
        workers=[scripted_worker("w", queue, record_file, prefetch=10, concurrency=4)])
    process = warren(text, **warren_options())

The broker section comes from WARREN_TEST_AMQP_URI, with the password moved out of the uri into
WARREN_BROKER_PASSWORD (warren warns about a password inside the uri); `warren_options()` and
`cli_environment()` carry it, and the test plugins' directory (WARREN_FIXTURE_PLUGIN_DIR, where
`scripted` and `noop` are built).
"""

import json
import re
import urllib.parse
from pathlib import Path
from typing import Any, Dict, Iterable, Mapping, Optional, Tuple

from testkit_env import env, unique_name
from testkit_warren import warren_cli

_BARE_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


# -- TOML rendering -------------------------------------------------------------------------------
def toml_key(key: str) -> str:
    return key if _BARE_KEY.match(key) else json.dumps(key)


def toml_value(value: Any) -> str:
    """One TOML value: bool, int, float, str, list (array) or dict (inline table)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)  # a TOML basic string: JSON's escapes are valid TOML escapes
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(item) for item in value) + "]"
    if isinstance(value, Mapping):
        if not value:
            return "{}"
        return "{ " + ", ".join(f"{toml_key(k)} = {toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"toml_value: cannot write {type(value).__name__} {value!r} as TOML")


def _table(header: str, values: Mapping[str, Any]) -> str:
    lines = [header] + [f"{toml_key(k)} = {toml_value(v)}" for k, v in values.items()
                        if v is not None]
    return "\n".join(lines) + "\n"


# -- the test broker ------------------------------------------------------------------------------
def broker_uri_and_password() -> Tuple[str, str]:
    """WARREN_TEST_AMQP_URI without its password, and the password."""
    parts = urllib.parse.urlsplit(env("WARREN_TEST_AMQP_URI"))
    user = urllib.parse.unquote(parts.username or "guest")
    password = urllib.parse.unquote(parts.password or "guest")
    netloc = f"{urllib.parse.quote(user, safe='')}@{parts.hostname}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path or "/", "", "")), password


def cli_environment() -> Dict[str, str]:
    """Environment additions for any warren command run against the test broker."""
    return {"WARREN_BROKER_PASSWORD": broker_uri_and_password()[1]}


def fixture_plugin_dir() -> str:
    return env("WARREN_FIXTURE_PLUGIN_DIR")


def apply_topology(config_text: str, directory: Any) -> None:
    """Declares CONFIG_TEXT's exchanges and queues with `warren topology apply` (the file is written
    to DIRECTORY/topology.toml), so that a test can publish before any host runs."""
    path = Path(directory) / "topology.toml"
    path.write_text(config_text)
    result = warren_cli("topology", "apply", "-c", str(path), env_overrides=cli_environment())
    assert result.returncode == 0, f"{result.stdout}{result.stderr}"


def warren_options(env_overrides: Optional[Dict[str, str]] = None, **kwargs: Any) -> Dict[str, Any]:
    """Keyword arguments for the `warren` fixture (WarrenProcess): the test plugins' directory and
    the broker password, plus whatever else the test passes."""
    return {"plugin_dir": fixture_plugin_dir(),
            "env_overrides": {**cli_environment(), **(env_overrides or {})}, **kwargs}


# -- configs --------------------------------------------------------------------------------------
def warren_config(*, exchanges: Iterable[Mapping[str, Any]] = (),
                  queues: Iterable[Mapping[str, Any]] = (),
                  workers: Iterable[Mapping[str, Any]] = (),
                  host: Optional[Mapping[str, Any]] = None,
                  broker: Optional[Mapping[str, Any]] = None,
                  metrics: Optional[Mapping[str, Any]] = None,
                  log: Optional[Mapping[str, Any]] = None) -> str:
    """A complete warren.toml. host/broker/metrics/log override the test defaults key by key:
    a unique host name, plugins from the test plugin directory, shutdown_timeout 30s, the test
    broker (heartbeat 10s, connect_timeout 5s, the product's reconnect backoff), metrics
    disabled, log level info."""
    uri, _password = broker_uri_and_password()
    sections = [
        _table("[host]", {"name": unique_name("itest-host"), "plugin_dir": fixture_plugin_dir(),
                          "shutdown_timeout": "30s", **(host or {})}),
        _table("[log]", {"level": "info", "format": "text", **(log or {})}),
        _table("[metrics]", {"enabled": False, **(metrics or {})}),
        _table("[broker]", {"uri": uri, "heartbeat": "10s", "connect_timeout": "5s",
                            **(broker or {})}),
    ]
    sections += [_table("[[exchanges]]", exchange) for exchange in exchanges]
    sections += [_table("[[queues]]", queue) for queue in queues]
    sections += [_table("[[workers]]", worker) for worker in workers]
    return "\n".join(sections)


def scripted_worker(name: str, queue: str, record_file: Any = None, *, prefetch: int = 20,
                    concurrency: int = 1, default_action: Optional[str] = None,
                    sleep_ms: Optional[int] = None, record_time: bool = False,
                    **keys: Any) -> Dict[str, Any]:
    """A [[workers]] entry running the `scripted` test plugin, recording to RECORD_FILE (with
    record_time, each record also says when its call began: Record.time). Further warren.toml
    worker keys (retry, dead_letter_queue...) go in KEYS. Without a dead_letter_exchange it may
    lose what it dead-letters (allow_message_loss, which warren requires of a worker that has no
    dead-letter exchange, nor its queue): the tests that care set a dead-letter exchange."""
    settings: Dict[str, str] = {}
    if record_file is not None:
        settings["record_file"] = str(record_file)
    if record_time:
        settings["record_time"] = "true"
    if default_action is not None:
        settings["default_action"] = default_action
    if sleep_ms is not None:
        settings["sleep_ms"] = str(sleep_ms)
    if "dead_letter_exchange" not in keys:
        keys.setdefault("allow_message_loss", True)
    worker = {"name": name, "plugin": "scripted", "queue": queue, "prefetch": prefetch,
              "concurrency": concurrency, **keys}
    if settings:
        worker["settings"] = settings
    return worker


def quorum_queue(name: str, **keys: Any) -> Dict[str, Any]:
    """A [[queues]] entry for a quorum queue that may lose messages past its delivery limit (the
    tests that care set a dead-letter exchange instead)."""
    if "dead_letter_exchange" not in keys:
        keys.setdefault("allow_message_loss", True)
    return {"name": name, "type": "quorum", **keys}


def classic_queue(name: str, **keys: Any) -> Dict[str, Any]:
    return {"name": name, "type": "classic", **keys}
