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
from testkit_transport import amqps_port, assert_consumes_and_publishes_over_tls, \
    assert_refused_over_tls, require_tls_broker
from warren_testkit import env, free_port, warren_cli


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


def test_Amqps_WithTheBrokersCaFile_ConsumesAndPublishesOverTls(
        broker, created, warren, record_file, tmp_path):
    queue, out_queue = created.queue("tls-work"), created.queue("tls-out")
    config = tls_config(queue, record_file, "localhost", ca_file=True, out_queue=out_queue)
    process = warren(config, **warren_options())
    process.wait_ready(timeout=30)
    assert_consumes_and_publishes_over_tls(process, broker, amqps_uri("localhost"), queue,
                                           out_queue, record_file)

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
    assert_refused_over_tls(process, amqps_uri("localhost"),
                            re.escape("SSL peer cert verification failed"), port)


def test_Amqps_ByANameNotInTheCertificate_HostnameVerificationFailsAndWarrenIsNotReady(
        created, warren, record_file):
    # The certificate names DNS:localhost only; 127.0.0.1 reaches the same listener.
    queue, port = created.queue("tls-wrong-name"), free_port()
    process = warren(tls_config(queue, record_file, "127.0.0.1", ca_file=True, port=port),
                     **warren_options())
    assert_refused_over_tls(process, amqps_uri("127.0.0.1"),
                            re.escape("SSL hostname verification failed"), port)
