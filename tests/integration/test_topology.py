"""Topology from warren.toml against a real broker: `warren topology apply` declares exactly what
the config says and can run any number of times; a declaration that conflicts with what exists is
refused naming the queue, the argument and both values; a worker on a queue the config does not
declare only runs when the queue exists; `warren check` accepts the shipped config and points at
file:line:col in a broken one."""

import re
import shutil
from pathlib import Path

from testkit_broker_state import queue_definitions
from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_config import (classic_queue, cli_environment, quorum_queue, scripted_worker,
                            warren_config, warren_options)
from warren_testkit import env, require_services, unique_name, warren_cli


def apply_topology(tmp_path: Path, config_text: str, name: str = "warren.toml"):
    require_services("rabbitmq", "warren")
    config = tmp_path / name
    config.write_text(config_text)
    return warren_cli("topology", "apply", "-c", str(config), env_overrides=cli_environment())


def test_TopologyApply_RunTwice_SucceedsBothTimesAndDeclaresTypesAndArguments(
        broker, created, tmp_path):
    events, dead = created.exchange("topo-events"), created.exchange("topo-dead")
    orders, audit = created.queue("topo-orders"), created.queue("topo-audit")
    config = warren_config(
        exchanges=[{"name": events, "type": "topic"}, {"name": dead, "type": "fanout"}],
        queues=[quorum_queue(orders, dead_letter_exchange=dead, delivery_limit=7,
                             max_length=1000,
                             bindings=[{"exchange": events, "routing_key": "order.*"}]),
                classic_queue(audit, message_ttl="60s", max_length=50,
                              overflow="reject-publish",
                              bindings=[{"exchange": events, "routing_key": "#"}])])

    first = apply_topology(tmp_path, config)
    second = apply_topology(tmp_path, config)

    assert first.returncode == 0, f"first apply: {first.stdout}{first.stderr}"
    assert second.returncode == 0, f"second apply: {second.stdout}{second.stderr}"
    queues = queue_definitions(broker)
    assert queues[orders] == ("quorum", {"x-queue-type": "quorum", "x-delivery-limit": 7,
                                         "x-max-length": 1000, "x-dead-letter-exchange": dead})
    assert queues[audit] == ("classic", {"x-message-ttl": 60000, "x-max-length": 50,
                                         "x-overflow": "reject-publish"})
    # The bindings work: a key for both queues reaches both, one for the audit only reaches it.
    broker.publish(events, "order.placed", "both", message_id="both")
    broker.publish(events, "invoice.sent", "audit only", message_id="audit-only")
    assert [m.message_id for m in broker.drain(orders, expect=1)] == ["both"]
    assert [m.message_id for m in broker.drain(audit, expect=2)] == ["both", "audit-only"]


def test_TopologyApply_QueueExistsAsClassicButConfigSaysQuorum_ExitsOneNamingQueueArgumentAndValues(
        broker, created, tmp_path):
    queue = broker.declare_queue(created.queue("topo-classic"), queue_type="classic")

    result = apply_topology(tmp_path, warren_config(queues=[quorum_queue(queue)]))

    assert result.returncode == 1, f"{result.stdout}{result.stderr}"
    message = result.stderr
    assert f"'{queue}'" in message and "x-queue-type" in message, message
    assert "quorum" in message, message
    # What exists: a classic queue carries no x-queue-type, which RabbitMQ reports as "none".
    assert re.search(r"\bnone\b|classic", message), message
    assert queue_definitions(broker)[queue][0] == "classic", "the existing queue was changed"


def test_TopologyApply_DifferentMaxLength_ExitsOneNamingQueueArgumentAndBothValues(
        broker, created, tmp_path, warren):
    queue = created.queue("topo-maxlen")
    assert apply_topology(tmp_path, warren_config(queues=[quorum_queue(queue, max_length=10)]),
                          "first.toml").returncode == 0

    conflicting = warren_config(queues=[quorum_queue(queue, max_length=20)],
                                workers=[scripted_worker("topo-maxlen", queue)])
    result = apply_topology(tmp_path, conflicting, "second.toml")

    assert result.returncode == 1, f"{result.stdout}{result.stderr}"
    message = result.stderr
    assert f"'{queue}'" in message and "x-max-length" in message, message
    assert re.search(r"\b10\b", message) and re.search(r"\b20\b", message), message
    assert queue_definitions(broker)[queue][1]["x-max-length"] == 10
    # `warren run` refuses the same conflict at start, with the same explanation.
    process = warren(conflicting, **warren_options())
    assert process.wait(timeout=30) == 1, process.describe()
    assert "x-max-length" in process.logs() and f"'{queue}'" in process.logs(), process.describe()


def test_Run_WorkerOnUndeclaredMissingQueue_ExitsOneThenRunsOnceTheQueueExists(
        broker, created, tmp_path, warren, record_file):
    queue = created.queue("topo-external")
    config = warren_config(workers=[scripted_worker("topo-external", queue, record_file)])

    refused = warren(config, **warren_options())

    assert refused.wait(timeout=30) == 1, refused.describe()
    assert re.search(rf"queue '{re.escape(queue)}' consumed by worker 'topo-external' does not "
                     r"exist", refused.logs()), refused.describe()

    broker.declare_queue(queue, queue_type="quorum")
    running = warren(config, **warren_options())
    running.wait_ready(timeout=30)
    message_id = broker.publish("", queue, "hello", message_id=unique_name("external"))
    records = record_file.wait_for_count(1, timeout=30)
    assert [r.message_id for r in records] == [message_id]
    assert running.terminate() == 0, running.describe()
    assert broker.message_count(queue) == 0


def test_Check_ShippedConfig_ExitsZero(tmp_path):
    require_services("warren")
    (tmp_path / "emails").mkdir()
    source = Path(env("WARREN_SOURCE_DIR"))

    result = warren_cli("check", "-c", str(source / "conf" / "warren.toml"),
                        "--plugin-dir", env("WARREN_PLUGIN_DIR"),
                        env_overrides={"WARREN_STATE_DIR": str(tmp_path)})

    assert result.returncode == 0, f"{result.stdout}{result.stderr}"
    assert "OK" in result.stdout and "worker emails" in result.stdout, result.stdout


def test_Check_BrokenConfig_ExitsTwoNamingFileLineAndColumnOfEveryProblem(tmp_path):
    require_services("warren")
    shipped = Path(env("WARREN_SOURCE_DIR")) / "conf" / "warren.toml"
    config = tmp_path / "broken.toml"
    shutil.copy(shipped, config)
    lines = config.read_text().splitlines()
    prefetch_line = next(i for i, line in enumerate(lines) if line.startswith("prefetch = 20"))
    lines[prefetch_line] = 'prefetch = "twenty"'
    lines.insert(prefetch_line + 1, 'colour = "blue"')
    config.write_text("\n".join(lines) + "\n")

    result = warren_cli("check", "-c", str(config), "--plugin-dir", env("WARREN_PLUGIN_DIR"),
                        env_overrides={"WARREN_STATE_DIR": str(tmp_path)})

    assert result.returncode == 2, f"{result.stdout}{result.stderr}"
    output = result.stdout + result.stderr
    # Lines are 1-based: the list index + 1.
    assert re.search(rf"{re.escape(str(config))}:{prefetch_line + 1}:\d+: .*prefetch", output), \
        output
    assert re.search(rf"{re.escape(str(config))}:{prefetch_line + 2}:\d+: .*colour", output), output
