"""The fault proxy (fault_proxy.py) against a local echo server: no broker, a few seconds."""

import asyncio
import json
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from fault_proxy import FaultProxy  # noqa: E402


@pytest.fixture()
def echo_port():
    """An echo server on loopback, in a thread of its own."""
    loop = asyncio.new_event_loop()

    async def echo(reader, writer):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
        writer.close()

    server = loop.run_until_complete(asyncio.start_server(echo, "127.0.0.1", 0))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    yield server.sockets[0].getsockname()[1]
    loop.call_soon_threadsafe(loop.stop)
    thread.join(5)
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.wait(pending))
    loop.close()


@pytest.fixture()
def proxy():
    with FaultProxy() as running:
        yield running


def connect(port: int, timeout: float = 2) -> socket.socket:
    client = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return client


def read_exactly(client: socket.socket, n: int) -> bytes:
    received = b""
    while len(received) < n:
        chunk = client.recv(n - len(received))
        if not chunk:
            break
        received += chunk
    return received


def round_trip(client: socket.socket, payload: bytes = b"ping") -> bytes:
    client.sendall(payload)
    return read_exactly(client, len(payload))


def closed_by_peer(client: socket.socket) -> bool:
    """The peer closed the connection (EOF or reset)."""
    try:
        return client.recv(10) == b""
    except ConnectionResetError:
        return True


def test_pass_forwards_both_ways(proxy, echo_port):
    route = proxy.add_route("a", echo_port)
    with connect(route.port) as client:
        assert round_trip(client, b"x" * 200000) == b"x" * 200000
    assert proxy.status()["a"]["accepted"] == 1


def test_delay_holds_every_chunk_and_keeps_order(proxy, echo_port):
    route = proxy.add_route("a", echo_port)
    proxy.set_mode("a", "delay", delay_ms=150, jitter_ms=20)
    with connect(route.port) as client:
        started = time.monotonic()
        assert round_trip(client, b"hello") == b"hello"
        # Both directions are delayed: 2 x (150 - 20) ms at least.
        assert time.monotonic() - started >= 0.26
        expected = b"".join(b"%03d" % index for index in range(20))
        for index in range(20):  # chunk by chunk: jitter must not reorder them
            client.sendall(b"%03d" % index)
            time.sleep(0.005)
        assert read_exactly(client, len(expected)) == expected


def test_drop_closes_new_connections_and_spares_open_ones(proxy, echo_port):
    route = proxy.add_route("a", echo_port)
    with connect(route.port) as old:
        assert round_trip(old) == b"ping"
        proxy.set_mode("a", "drop")
        with connect(route.port) as new:
            assert closed_by_peer(new)
        assert round_trip(old) == b"ping"
    assert proxy.status()["a"]["dropped"] == 1


def test_cut_closes_every_open_connection(proxy, echo_port):
    route = proxy.add_route("a", echo_port)
    clients = [connect(route.port) for _ in range(3)]
    for client in clients:
        assert round_trip(client) == b"ping"
    assert proxy.cut("a") == 3
    for client in clients:
        assert closed_by_peer(client)
        client.close()
    with connect(route.port) as after:  # the route itself still passes
        assert round_trip(after) == b"ping"


def test_blackhole_holds_traffic_without_closing_then_pass_releases_it(proxy, echo_port):
    route = proxy.add_route("a", echo_port)
    with connect(route.port, timeout=0.5) as client:
        assert round_trip(client) == b"ping"
        proxy.set_mode("a", "blackhole")
        client.sendall(b"held")
        with pytest.raises(socket.timeout):  # no answer, and no close either
            client.recv(10)
        with connect(route.port, timeout=0.5) as newcomer:  # accepted, then silence
            newcomer.sendall(b"new")
            with pytest.raises(socket.timeout):
                newcomer.recv(10)
            assert proxy.status()["a"]["connections"] == 2
            proxy.set_mode("a", "pass")
            client.settimeout(2)
            newcomer.settimeout(2)
            assert client.recv(10) == b"held"
            assert newcomer.recv(10) == b"new"


def test_control_channel_from_a_shell(proxy, echo_port):
    proxy.add_route("n1", echo_port)
    port = proxy.serve_control()
    script = Path(__file__).with_name("fault_proxy.py")

    def ctl(*args):
        return subprocess.run([sys.executable, str(script), "ctl", str(port), *args],
                              capture_output=True, text=True, timeout=10)

    result = ctl("n1", "delay", "--delay-ms", "40", "--jitter-ms", "5")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["n1"]["mode"] == "delay"
    assert proxy.status()["n1"]["delay_ms"] == 40
    assert ctl("n1", "bogus").returncode == 1
    assert ctl("nope", "pass").returncode == 1
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/n1/blackhole", timeout=5) as response:
        assert json.load(response)["n1"]["mode"] == "blackhole"
    assert json.loads(ctl().stdout)["n1"]["mode"] == "blackhole"
