"""The `warren` command line at its edges: values a config check or a message header can hold that
must end in an exit code and a message (2: usage or config, 1: runtime failure), never in an
abort, and never in a message that shows a password.
"""

import textwrap

from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from warren_testkit import env, require_services, warren_cli


def write_config(tmp_path, text: str) -> str:
    path = tmp_path / "warren.toml"
    path.write_text(textwrap.dedent(text))
    return str(path)


def output(result) -> str:
    return f"exit {result.returncode}\nstdout:\n{result.stdout}\nstderr:\n{result.stderr}"


def test_run_with_a_vhost_the_broker_library_cannot_parse_exits_2_naming_the_line(tmp_path):
    # rabbitmq-c's amqp_parse_url refuses a '/' inside the vhost; the config check used to let it
    # through and `warren run` then died of an uncaught exception (SIGABRT) at start.
    require_services("warren")
    config = write_config(tmp_path, """\
        [broker]
        uri = "amqp://guest@127.0.0.1:1/team/orders"
        """)
    result = warren_cli("run", "-c", config, timeout=30)
    assert result.returncode == 2, output(result)
    assert f"{config}:2:7" in result.stderr, output(result)
    assert "the vhost holds '/': percent-encode it as %2F" in result.stderr, output(result)


def test_malformed_warren_broker_uri_exits_2_without_showing_its_password(tmp_path):
    require_services("warren")
    config = write_config(tmp_path, """\
        [broker]
        uri = "amqp://guest@127.0.0.1:1/"
        """)
    result = warren_cli("check", "-c", config, timeout=30,
                        env_overrides={"WARREN_BROKER_URI": "amqp://ops:s3cret@broker:99999/"})
    assert result.returncode == 2, output(result)
    assert "WARREN_BROKER_URI" in result.stderr, output(result)
    assert "s3cret" not in result.stderr + result.stdout, output(result)


def test_dlq_replay_of_a_letter_whose_replay_count_is_not_a_number_counts_it_as_zero(
        tmp_path, broker, created):
    # The header travels with the message: anyone can set it. `std::stoul("abc")` used to end the
    # replay in std::terminate.
    require_services("rabbitmq", "warren")
    exchange = created.exchange("cli-edges-ex")
    work = created.queue("cli-edges-work")
    dead = created.queue("cli-edges-dead")
    broker.declare_exchange(exchange, "topic")
    broker.declare_queue(work)
    broker.bind_queue(work, exchange, "order.#")
    broker.declare_queue(dead)
    broker.publish("", dead, "{}", message_id="letter-1", headers={
        "x-warren-worker": "w",
        "x-warren-original-exchange": exchange,
        "x-warren-original-routing-key": "order.created",
        "x-warren-replay-count": "abc",
    })
    config = write_config(tmp_path, f"""\
        [broker]
        uri = "{env("WARREN_TEST_AMQP_URI")}"

        [[workers]]
        name = "w"
        plugin = "scripted"
        queue = "{work}"
        allow_message_loss = true
        """)

    result = warren_cli("dlq", "replay", "-c", config, "--worker", "w", "--queue", dead,
                        timeout=60)

    assert result.returncode == 0, output(result)
    assert "1 message(s) replayed" in result.stdout, output(result)
    replayed = broker.get(work)
    assert replayed is not None and replayed.message_id == "letter-1"
    assert replayed.headers["x-warren-replay-count"] in ("1", b"1"), replayed.headers


def test_run_with_a_misspelt_plugin_exits_2_naming_the_worker_its_line_and_the_plugins_there(
        tmp_path):
    # A worker's plugin that is not in the plugin directory: the refusal says which worker asked
    # for it, where the configuration declares that worker, and what the directory does hold.
    require_services("warren")
    config = write_config(tmp_path, f"""\
        [host]
        name = "misspelt-plugin"
        plugin_dir = "{env("WARREN_PLUGIN_DIR")}"

        [metrics]
        enabled = false

        [broker]
        transport = "sqlite"

        [broker.sqlite]
        path = "{tmp_path / "queue.db"}"

        [[queues]]
        name = "emails"

        [[workers]]
        name = "emails"
        queue = "emails"
        plugin = "order_emial"
        """)
    result = warren_cli("run", "-c", config, timeout=30)
    assert result.returncode == 2, output(result)
    assert f"liborder_emial.so\": worker 'emails' ({config}:17:1): not found" in result.stderr, \
        output(result)
    assert "(the directory holds " in result.stderr and "order_email" in result.stderr, \
        output(result)
