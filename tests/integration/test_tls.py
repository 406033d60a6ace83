"""TLS to the broker (issue 3: `amqps://`, `ca_file`; peer and hostname verification always on):
warren consumes and publishes over TLS when it trusts the broker's CA, and refuses to talk to a
broker whose certificate it cannot verify, or which was reached under a name the certificate
does not carry, saying which check failed and never becoming ready.

The broker's TLS listener comes from `WARREN_RABBITMQ_TLS=1 scripts/services/rabbitmq.sh start`
(scripts/test starts the shared broker so): a throwaway CA (WARREN_TEST_CA_FILE) that no system
trust store knows, and a server certificate for DNS:localhost only. The test publishes its
messages over plain AMQP (the kit's connection) and checks what warren did over TLS.
"""

import re

import pytest

from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_config import classic_queue, cli_environment, scripted_worker, warren_config, \
    warren_options
from testkit_traffic import Tally
from testkit_transport import amqps_port, readyz_status, require_tls_broker
from warren_testkit import WarrenProcess, env, free_port, wait_until, warren_cli


@pytest.fixture(autouse=True)
def tls_broker() -> None:
    require_tls_broker()


def amqps_uri(host: str) -> str:
    return f"amqps://guest@{host}:{amqps_port()}/"


def tls_config(queue: str, record_file, host: str, *, ca_file: bool, port: int = 0,
               out_queue: str = "") -> str:
    broker = {"uri": amqps_uri(host), "reconnect_initial": "200ms", "reconnect_max": "1s"}
    if ca_file:
        broker["ca_file"] = env("WARREN_TEST_CA_FILE")
    return warren_config(
        queues=[classic_queue(queue)] + ([classic_queue(out_queue)] if out_queue else []),
        workers=[scripted_worker("tls", queue, record_file)],
        broker=broker,
        metrics={"enabled": True, "listen": f"127.0.0.1:{port}"} if port else None)


def refused_for(process: WarrenProcess, host: str, reason: str, port: int) -> None:
    """Waits until the consumer has failed to connect twice for REASON (it keeps trying), then
    checks that it never consumed and is not ready."""
    failed = re.compile(rf"^\S+ warning +cannot connect to {re.escape(amqps_uri(host))}: "
                        rf"{re.escape(reason)}$", re.MULTILINE)
    wait_until(lambda: len(failed.findall(process.logs())) >= 2, 30,
               what=lambda: f"two connection attempts refused with '{reason}': "
                            f"{process.describe()}")
    assert process.running(), process.describe()
    assert "consuming" not in process.logs(), process.describe()
    assert readyz_status(f"127.0.0.1:{port}") == 503, process.describe()


def test_Amqps_WithTheBrokersCaFile_ConsumesAndPublishesOverTls(
        broker, created, warren, record_file, tmp_path):
    queue, out_queue = created.queue("tls-work"), created.queue("tls-out")
    config = tls_config(queue, record_file, "localhost", ca_file=True, out_queue=out_queue)
    process = warren(config, **warren_options())
    process.wait_ready(timeout=30)

    ids = broker.publish_many("", queue, 20, prefix="tls",
                              headers={"x-test-action": f"publish::{out_queue}"})
    wait_until(lambda: Tally.of(ids, record_file.ids()).complete, 30,
               what=lambda: Tally.of(ids, record_file.ids()).summary())
    Tally.of(ids, record_file.ids()).assert_exactly_once()
    wait_until(lambda: broker.message_count(out_queue) == len(ids), 15,
               what="the handlers' publishes over the TLS publisher connection")
    logs = process.logs()
    assert re.search(rf"connected to {re.escape(amqps_uri('localhost'))}; 1 worker\(s\) consuming",
                     logs), process.describe()
    assert f"publisher connected to {amqps_uri('localhost')}" in logs, process.describe()

    config_path = tmp_path / "warren.toml"
    config_path.write_text(config)
    cli = warren_cli("publish", "-c", str(config_path), "--exchange", "", "--routing-key",
                     out_queue, "--body", "over tls", env_overrides=cli_environment())
    assert cli.returncode == 0, f"{cli.stdout}{cli.stderr}"


def test_Amqps_WithoutCaFile_CertificateVerificationFailsAndWarrenIsNotReady(
        created, warren, record_file):
    # No ca_file: the system trust store, which does not know the throwaway CA.
    queue, port = created.queue("tls-no-ca"), free_port()
    process = warren(tls_config(queue, record_file, "localhost", ca_file=False, port=port),
                     **warren_options())
    refused_for(process, "localhost", "SSL peer cert verification failed", port)


def test_Amqps_ByANameNotInTheCertificate_HostnameVerificationFailsAndWarrenIsNotReady(
        created, warren, record_file):
    # The certificate names DNS:localhost only; 127.0.0.1 reaches the same listener.
    queue, port = created.queue("tls-wrong-name"), free_port()
    process = warren(tls_config(queue, record_file, "127.0.0.1", ca_file=True, port=port),
                     **warren_options())
    refused_for(process, "127.0.0.1", "SSL hostname verification failed", port)
