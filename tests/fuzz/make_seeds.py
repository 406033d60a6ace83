#!/usr/bin/python3
"""Writes the seed corpora of tests/fuzz/corpus/<target>/: valid inputs taken from the example
configurations and the unit tests, AMQP tables and properties encoded by pika. Run it again after
changing it (seeds are committed, so that a fuzz run needs no Python); scripts/fuzz never writes
into tests/fuzz/corpus itself.

Usage: tests/fuzz/make_seeds.py   (Debian's python3 with python3-pika)
"""
import datetime
import hashlib
import pathlib
import re
import struct
import zlib
from decimal import Decimal

from pika import data as amqp_data
from pika import spec

ROOT = pathlib.Path(__file__).resolve().parents[2]
CORPUS = ROOT / "tests" / "fuzz" / "corpus"


def write(target, seeds):
    directory = CORPUS / target
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        old.unlink()
    for seed in seeds:
        if isinstance(seed, str):
            seed = seed.encode()
        name = hashlib.sha1(seed).hexdigest()[:16]
        (directory / name).write_bytes(seed)


def fdp_string(text):
    """A string as FuzzedDataProvider.ConsumeRandomLengthString reads it: '\\' doubled, ended
    by a backslash and another character."""
    return text.replace("\\", "\\\\") + "\\ "


def config_seeds():
    # A finding (docs/fuzzing.md): a secret file that never ends.
    seeds = ['[metrics]\nuser = "u"\npassword_file = "/dev/zero"\n']
    seeds += [path.read_text() for path in sorted((ROOT / "conf").glob("*.toml"))]
    seeds += [path.read_text() for path in sorted((ROOT / "examples").rglob("*.toml"))]
    tests = sorted((ROOT / "tests" / "unit" / "config").glob("*_test.cc"))
    for test in tests:
        for raw in re.findall(r'R"\((.*?)\)"', test.read_text(), re.S)[:2]:
            if "[" in raw and len(raw) > 40:
                seeds.append(raw)
    return seeds


def table(entries):
    pieces = []
    amqp_data.encode_table(pieces, entries)
    return b"".join(pieces)


TABLES = [
    {},
    {"x-warren-attempt": "2", "x-warren-error": "ValueError: bad", "traceparent":
     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},
    {"int": 42, "negative": -7, "big": 2 ** 40, "bool": True, "none": None},
    {"bytes": b"\x00\xff", "decimal": Decimal("3.14"),
     "time": datetime.datetime(2026, 1, 2, 3, 4, 5)},
    {"array": [1, "two", True, [3, 4]], "nested": {"a": {"b": {"c": 1}}}},
    {"x-death": [{"count": 1, "reason": "rejected", "queue": "orders",
                  "exchange": "orders", "routing-keys": ["order.created"],
                  "time": datetime.datetime(2026, 1, 2, 3, 4, 5)}],
     "x-first-death-reason": "rejected", "x-first-death-queue": "orders",
     "x-first-death-exchange": "orders", "x-delivery-count": 3},
    {"dup": "1", "utf8": "zürich ✓"},
    # A retry sets x-warren-attempt as text where the delivery had a table.
    {"x-warren-attempt": {"n": 1}, "after": "x", "x-delivery-count": Decimal("1.5")},
]


def every_field_type():
    """A table with one entry of each AMQP field type rabbitmq-c reads (pika writes only some)."""
    values = [b"b\xfe", b"B\xfe", b"s\xff\xfe", b"u\xff\xfe", b"I\xff\xff\xff\xfe",
              b"i\xff\xff\xff\xfe", b"l" + struct.pack(">q", -2), b"L" + struct.pack(">Q", 2 ** 63),
              b"f" + struct.pack(">f", 1.5), b"d" + struct.pack(">d", -0.1),
              b"D\x02\x00\x00\x01\x3a", b"S\x00\x00\x00\x02ok", b"x\x00\x00\x00\x01\x00",
              b"T" + struct.pack(">Q", 1767322800), b"V", b"t\x00",
              b"A\x00\x00\x00\x04b\x01V", b"F\x00\x00\x00\x00"]
    body = b""
    for index, value in enumerate(values):
        key = ("k%d" % index).encode()
        body += bytes([len(key)]) + key + value
    return struct.pack(">I", len(body)) + body


def properties_seeds():
    seeds = []
    for headers in TABLES:
        properties = spec.BasicProperties(
            content_type="application/json", content_encoding="gzip", headers=headers or None,
            delivery_mode=2, priority=5, correlation_id="corr-1", reply_to="replies",
            expiration="60000", message_id="m-1", timestamp=1767322800, type="order.created",
            user_id="guest", app_id="shop", cluster_id="")
        seeds.append(b"".join(properties.encode()))
    seeds.append(b"".join(spec.BasicProperties().encode()))
    seeds.append(b"".join(spec.BasicProperties(expiration="5", headers={"a": "b"}).encode()))
    return seeds


def journal(slots):
    header = b"WRNCRASH" + struct.pack("<IIIIq", 1, 512, len(slots), 4242, 1767322800000)
    header += struct.pack("<I", zlib.crc32(header)) + struct.pack("<i", 0) + bytes(24)
    body = b""
    for state, worker, queue, key in slots:
        texts = (worker + queue + key).encode()
        checked = struct.pack("<qHHHH", 1767322800000, len(worker), len(queue), len(key), 0)
        checked += texts
        slot = struct.pack("<II", state, zlib.crc32(checked)) + checked
        body += slot + bytes(512 - len(slot))
    return header + body


def ledger(lines):
    content = "warren crash ledger 1\n" + "".join(line + "\n" for line in lines)
    return content + "end\t%08x\n" % zlib.crc32(content.encode())


def frame(kind, *fields):
    """An isolation frame (host/src/isolation/frames.cc): its type, then fields given as
    ("u8"|"u32"|"u64"|"f64", value), a str/bytes (length-prefixed) or a list of them."""
    out = bytearray([kind])

    def put(field):
        if isinstance(field, (str, bytes)):
            raw = field.encode() if isinstance(field, str) else field
            out.extend(struct.pack("<I", len(raw)) + raw)
        elif isinstance(field, tuple):
            out.extend(struct.pack({"u8": "<B", "u32": "<I", "u64": "<Q", "f64": "<d"}[field[0]],
                                   field[1]))
        else:
            out.extend(struct.pack("<I", len(field)))
            for item in field:
                put(item)

    for field in fields:
        put(field)
    return bytes(out)


def isolation_frames():
    """One of each frame type the host and a child exchange (frames.h's variant order)."""
    u8, u32, u64, f64 = (lambda v: ("u8", v)), (lambda v: ("u32", v)), (lambda v: ("u64", v)), \
        (lambda v: ("f64", v))
    headers = [("traceparent", "00-" + "a" * 32 + "-" + "b" * 16 + "-01")]
    flat_headers = [item for pair in headers for item in pair]
    deliver_headers = struct.pack("<I", len(headers)) + b"".join(
        struct.pack("<I", len(s)) + s.encode() for s in flat_headers)
    return [
        frame(0, u32(1), "orders", "/proc/self/fd/7") + struct.pack("<I", 1) +
        struct.pack("<I", 3) + b"dsn" + struct.pack("<I", 1) + b"x" + bytes([2]),
        frame(1, u32(1), u32(1), u32(2), "scripted", "1.0.0"),
        frame(2),
        frame(3, "init: missing setting 'dsn'"),
        frame(4, u64(1), "body", "rk", "ex", "id-1", "text/plain", u32(1), u8(0)) +
        deliver_headers,
        frame(5, u64(1), u8(1), u8(1), u64(250), "db busy", u32(1), "std::runtime_error"),
        frame(6, u64(1), u64(7), "audit", "seen", "body", "", "id-2") + struct.pack("<I", 0) +
        bytes([1]),
        frame(7, u64(7), u8(1), "unroutable"),
        frame(8, u64(0), u8(2), "worker line"),
        frame(9, u32(1), u32(1), "orders_seconds", "help", [f64(0.1), f64(1.0)], ["shop"]),
        frame(10, u32(1), ""),
        frame(11, u32(1), ["eu"], f64(0.25)),
        frame(12, u64(1)),
        frame(13, u64(9)),
        frame(14, u64(9)),
        frame(15),
    ]


def main():
    write("config_loader", config_seeds())
    write("env_expansion", ["${HOME}/state", "${UNSET:-/var/lib/warren}", "$$HOME", "a$b",
                            "${STATE_DIRECTORY:-${HOME}}", "${", "${}", "${SET:-}", "$"])
    write("config_values", ["250ms", "30s", "5m", "1h30m", "7d", "1h1m1s1ms", "0s",
                            "9223372036854775807ms", "512MiB", "1GiB", "64MB",
                            "100KiB", "2GB", "1048576", "18446744073709551615B",
                            "16777216TiB", "amqp://guest:guest@localhost:5672/%2f",
                            "amqps://user@broker.example:5671/vhost", "amqp://localhost",
                            "127.0.0.1:9464", "[::1]:9464", "0.0.0.0:0", "localhost:80"])
    write("amqp_table", [table(entries) for entries in TABLES] + [every_field_type()])
    write("wire_properties", properties_seeds())
    write("failure_headers", [
        "\x01" + fdp_string("warren.delay.delivery") + fdp_string("orders") + "\x01\x02",
        "\x00" + fdp_string("orders") + fdp_string("order.created") + fdp_string("q") +
        "\x03\x01\x00" + fdp_string("7") + "\x01\x05" + fdp_string("zürich ✓" * 200)])
    write("trace_context", [
        "\x00" + fdp_string("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01") + "vendor=1",
        "\x00" + fdp_string("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra") + "",
        "\x00" + fdp_string("00-00000000000000000000000000000000-00f067aa0ba902b7-01") + "a=b"])
    row = fdp_string("0b6e5a8e-5a44-4d3f-8f4e-1d2b3c4d5e6f") + fdp_string("") + fdp_string("")
    write("row_headers", [row + "{}", row + '{"a":"b","n":1,"f":1.5,"t":true,"z":null}',
                          row + '{"x-warren-attempt":"2","traceparent":"00-ab-cd-01"}',
                          row + "[1,2]", row + '{"nested":{"a":1}}', row + '"text"'])
    write("metrics_request", ["\x01\x00\x01\x00\x00\x01", "\x01\x00\x01\x00\x01\x00",
                              "\x00GET\\ \x00/metrics\\ \x01Basic cHJvbWV0aGV1czpz",
                              "\x01\x01\x01\x02\x02"])
    write("crash_journal", [journal([]),
                            journal([(0x4E555221, "orders", "orders.q", "m-1"), (0, "", "", "")]),
                            journal([(0x4E555221, "w", "q", "k" * 40), (7, "", "", "")])])
    write("isolation_frames", isolation_frames())
    write("crash_ledger", [ledger([]),
                           ledger(["1\t1767322800000\t11\torders\torders.q\tm-1",
                                   "3\t1767322800000\t0\tw\\tx\tq\\\\\tkey\\n"]),
                           # Findings (docs/fuzzing.md): the earliest time, the largest count.
                           ledger(["1\t-9223372036854775808\t11\tw\tq\tk"]),
                           ledger(["2147483647\t1767322800000\t11\tw\tq\tk"])])


if __name__ == "__main__":
    main()
