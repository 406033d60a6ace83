"""TLS client certificates (issue 16: `[broker] cert_file`, `key_file`): against a broker that
requires one (`ssl_options.verify = verify_peer`, `fail_if_no_peer_cert = true`), warren consumes
and publishes with a certificate from the broker's CA; without a certificate, with one from
another CA or an expired one, the broker refuses the handshake and warren says which check
failed, keeps trying and never becomes ready; a key that is not the certificate's stops warren at
start, naming both files.

The broker's side of verification is tested in test_tls.py against the shared TLS listener (which
does not require client certificates): a CA warren does not trust (no ca_file) and a host name the
server certificate does not carry. Not repeated here.

This module starts a private broker of its own (`WARREN_RABBITMQ_TLS=1
WARREN_RABBITMQ_TLS_CLIENT=1 scripts/services/rabbitmq.sh`, about 8 s): RabbitMQ has one
ssl_options for all its TLS listeners, and requiring client certificates on the shared one would
refuse every other test. Its script signs the client certificates with the throwaway CA; the
certificate from another CA and the key that matches nothing are made here with openssl.
"""

import os
import re
import subprocess
import urllib.parse
from pathlib import Path
from types import SimpleNamespace
from typing import Iterator

import pika.exceptions
import pytest

from testkit_broker import Broker
from testkit_config import classic_queue, scripted_worker, warren_config, warren_options
from testkit_transport import assert_consumes_and_publishes_over_tls, assert_refused_over_tls, \
    require_tls_broker
from warren_testkit import env, free_port, unique_name, warren_cli


def run_openssl(directory: Path, *args: str) -> None:
    result = subprocess.run(["openssl", *args], cwd=directory, capture_output=True, text=True,
                            check=False)
    assert result.returncode == 0, f"openssl {' '.join(args)}: {result.stderr}"


def make_foreign_credentials(directory: Path) -> SimpleNamespace:
    """A client certificate signed by a CA the broker does not know, and a key (mode 0600, so
    that only the mismatch is wrong with it) that belongs to no certificate."""
    directory.mkdir(mode=0o700)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    run_openssl(directory, "req", "-x509", "-new", *ec, "-keyout", "other-ca.key", "-out",
                "other-ca.pem", "-days", "30", "-subj", "/CN=Some other CA",
                "-addext", "basicConstraints=critical,CA:TRUE")
    run_openssl(directory, "req", "-new", *ec, "-keyout", "other.key", "-out", "other.csr",
                "-subj", "/CN=warren-test-client")
    run_openssl(directory, "x509", "-req", "-in", "other.csr", "-CA", "other-ca.pem", "-CAkey",
                "other-ca.key", "-CAcreateserial", "-days", "30", "-out", "other.pem")
    run_openssl(directory, "genpkey", "-algorithm", "EC", "-pkeyopt",
                "ec_paramgen_curve:prime256v1", "-out", "unrelated.key")
    for key in ("other.key", "unrelated.key"):
        (directory / key).chmod(0o600)
    return SimpleNamespace(cert=directory / "other.pem", key=directory / "other.key",
                           unrelated_key=directory / "unrelated.key")


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory) -> Iterator[SimpleNamespace]:
    """The private broker requiring client certificates, and the files to talk to it with."""
    require_tls_broker()  # openssl, and a run that has the TLS services (skips otherwise)
    state = tmp_path_factory.mktemp("client-cert-broker")
    script = Path(env("WARREN_SOURCE_DIR")) / "scripts" / "services" / "rabbitmq.sh"
    environment = {**os.environ, "WARREN_RABBITMQ_TLS": "1", "WARREN_RABBITMQ_TLS_CLIENT": "1"}
    started = subprocess.run([str(script), "start", str(state)], env=environment,
                             capture_output=True, text=True, timeout=180, check=False)
    assert started.returncode == 0, f"private TLS broker: {started.stdout}{started.stderr}"
    try:
        values = {}
        for line in (state / "env").read_text().splitlines():
            if line.startswith("export "):
                name, _, value = line[len("export "):].partition("=")
                values[name] = value
        amqps_port = urllib.parse.urlsplit(values["WARREN_TEST_AMQPS_URI"]).port
        yield SimpleNamespace(
            amqp_uri=values["WARREN_TEST_AMQP_URI"], rabbitmqctl=values["WARREN_TEST_RABBITMQCTL"],
            amqps_uri=f"amqps://guest@localhost:{amqps_port}/", ca_file=values["WARREN_TEST_CA_FILE"],
            cert=values["WARREN_TEST_CLIENT_CERT_FILE"], key=values["WARREN_TEST_CLIENT_KEY_FILE"],
            expired_cert=values["WARREN_TEST_EXPIRED_CLIENT_CERT_FILE"],
            foreign=make_foreign_credentials(state / "foreign"))
    finally:
        subprocess.run([str(script), "stop", str(state)], capture_output=True, timeout=120,
                       check=False)


@pytest.fixture
def private_broker(tls_broker) -> Iterator[Broker]:
    """A plain-AMQP connection to the private broker (the test's own publishing and counting)."""
    with Broker(tls_broker.amqp_uri, tls_broker.rabbitmqctl) as connection:
        yield connection


def client_config(tls_broker, queue: str, record_file, *, cert=None, key=None, port: int = 0,
                  out_queue: str = "") -> str:
    broker = {"uri": tls_broker.amqps_uri, "ca_file": tls_broker.ca_file,
              "reconnect_initial": "200ms", "reconnect_max": "1s"}
    if cert is not None:
        broker.update(cert_file=str(cert), key_file=str(key))
    return warren_config(
        queues=[classic_queue(queue)] + ([classic_queue(out_queue)] if out_queue else []),
        workers=[scripted_worker("tls-client", queue, record_file)],
        broker=broker,
        metrics={"enabled": True, "listen": f"127.0.0.1:{port}"} if port else None)


def private_options(tls_broker):
    password = urllib.parse.urlsplit(tls_broker.amqp_uri).password
    return warren_options(env_overrides={"WARREN_BROKER_PASSWORD": password})


def test_ClientCertificate_FromTheBrokersCa_ConsumesAndPublishesOverTls(
        tls_broker, private_broker, warren, record_file):
    queue, out_queue = unique_name("tls-client-work"), unique_name("tls-client-out")
    process = warren(client_config(tls_broker, queue, record_file, cert=tls_broker.cert,
                                   key=tls_broker.key, out_queue=out_queue),
                     **private_options(tls_broker))
    process.wait_ready(timeout=30)

    assert_consumes_and_publishes_over_tls(process, private_broker, tls_broker.amqps_uri, queue,
                                           out_queue, record_file)


# What the broker answers (a TLS alert, which rabbitmq-c reports as a bare "SSL error" and warren
# completes with OpenSSL's reason), for each certificate it refuses.
REFUSED = {
    "no client certificate": "tlsv13 alert certificate required",
    "a certificate from another CA": "tlsv1 alert unknown ca",
    "an expired certificate": "sslv3 alert certificate expired",
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_ClientCertificate_RefusedByTheBroker_WarrenSaysWhyAndIsNeverReady(
        tls_broker, private_broker, warren, record_file, case):
    credentials = {
        "no client certificate": (None, None),
        "a certificate from another CA": (tls_broker.foreign.cert, tls_broker.foreign.key),
        "an expired certificate": (tls_broker.expired_cert, tls_broker.key),
    }[case]
    queue, port = unique_name("tls-client-refused"), free_port()
    process = warren(client_config(tls_broker, queue, record_file, cert=credentials[0],
                                   key=credentials[1], port=port),
                     **private_options(tls_broker))
    # rabbitmq-c's status ("a SSL error occurred" or another), then the broker's alert.
    assert_refused_over_tls(process, tls_broker.amqps_uri, rf".*\({re.escape(REFUSED[case])}\)",
                            port)
    # Nothing got past the refusal: the consumer never declared its queue.
    with pytest.raises(pika.exceptions.ChannelClosedByBroker, match="NOT_FOUND"):
        private_broker.message_count(queue)


@pytest.mark.parametrize("verb", ["run", "check"])
def test_KeyThatIsNotTheCertificates_IsRefusedAtStartNamingBothFiles(
        tls_broker, record_file, tmp_path, verb):
    config = tmp_path / "warren.toml"
    config.write_text(client_config(tls_broker, unique_name("tls-client-mismatch"), record_file,
                                    cert=tls_broker.cert, key=tls_broker.foreign.unrelated_key))
    options = private_options(tls_broker)
    result = warren_cli(verb, "-c", str(config), "--plugin-dir", options["plugin_dir"],
                        env_overrides=options["env_overrides"], timeout=30)
    assert result.returncode == 2, f"{result.stdout}{result.stderr}"
    assert (f'{config}: [broker] key_file "{tls_broker.foreign.unrelated_key}" is not the key of '
            f'cert_file "{tls_broker.cert}" (key values mismatch)') in result.stderr, result.stderr
