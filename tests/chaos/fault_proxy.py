#!/usr/bin/python3
"""A TCP fault proxy for the chaos scenarios: loopback only, python3 stdlib (asyncio) only.

Each *route* listens on a 127.0.0.1 port and forwards every connection to one upstream port (a
broker node). A scenario gives every Warren host its own route to each node, so a fault can hit
one host's link to one node and nothing else. Each route has a mode, changed at any time:

  pass                      forward both ways
  delay MS [JITTER_MS]      forward every chunk MS (+- JITTER_MS, uniform) late, in order
  drop                      close new connections at once (the ones open keep working)
  blackhole                 stop forwarding both ways and close nothing: the half-open link that
                            only heartbeats detect. New connections are accepted and hang too.
                            What was held back flows again on `pass`, as after a healed partition.
and one action:
  cut                       close every connection of the route now (the mode stays)

Driven in process (FaultProxy, its own thread and event loop):

    proxy = FaultProxy()
    route = proxy.add_route("h1-n1", upstream_port=5672)   # route.port: where clients connect
    proxy.set_mode("h1-n1", "blackhole"); ...; proxy.set_mode("h1-n1", "pass")

or from a shell, through a small HTTP control channel on loopback:

    tests/chaos/fault_proxy.py serve --control 7000 --route h1-n1=7001:5672 ...
    curl -s 127.0.0.1:7000/h1-n1/delay?ms=200\\&jitter_ms=50     # or: fault_proxy.py ctl 7000 ...
    curl -s 127.0.0.1:7000/h1-n1/cut ; curl -s 127.0.0.1:7000/      # status of every route (JSON)
"""

import argparse
import asyncio
import json
import random
import sys
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Dict, Optional, Set

LOOPBACK = "127.0.0.1"
MODES = ("pass", "delay", "drop", "blackhole")
CHUNK = 65536


@dataclass
class Mode:
    name: str = "pass"
    delay_ms: float = 0.0
    jitter_ms: float = 0.0

    def lag(self) -> float:
        """Seconds a chunk waits before it is forwarded."""
        if self.name != "delay":
            return 0.0
        return max(0.0, self.delay_ms + random.uniform(-self.jitter_ms, self.jitter_ms)) / 1000


class Link:
    """One client connection and its upstream connection."""

    def __init__(self, route: "Route", client_writer: asyncio.StreamWriter):
        self.route = route
        self.writers = [client_writer]
        self.tasks: Set[asyncio.Task] = set()

    def close(self) -> None:
        for writer in self.writers:
            writer.transport.abort()  # no graceful FIN wait: a cut is a cut
        current = asyncio.current_task()
        for task in self.tasks:
            if task is not current:
                task.cancel()


@dataclass
class Route:
    name: str
    upstream_port: int
    port: int = 0
    mode: Mode = field(default_factory=Mode)
    links: Set[Link] = field(default_factory=set)
    accepted: int = 0
    dropped: int = 0
    server: Optional[asyncio.base_events.Server] = None
    # Set while data may flow; cleared by blackhole (the pumps wait on it).
    flowing: asyncio.Event = field(default_factory=asyncio.Event)

    def status(self) -> dict:
        return {"port": self.port, "upstream_port": self.upstream_port, "mode": self.mode.name,
                "delay_ms": self.mode.delay_ms, "jitter_ms": self.mode.jitter_ms,
                "connections": len(self.links), "accepted": self.accepted,
                "dropped": self.dropped}

    async def serve(self, client_reader, client_writer) -> None:
        if self.mode.name == "drop":
            self.dropped += 1
            client_writer.transport.abort()
            return
        self.accepted += 1
        link = Link(self, client_writer)
        link.tasks.add(asyncio.current_task())  # a cut ends a link still waiting to connect
        self.links.add(link)
        try:
            await self.flowing.wait()  # a blackholed route does not even reach the node
            upstream_reader, upstream_writer = await asyncio.open_connection(
                LOOPBACK, self.upstream_port)
            link.writers.append(upstream_writer)
            pumps = [asyncio.ensure_future(self._pump(client_reader, upstream_writer)),
                     asyncio.ensure_future(self._pump(upstream_reader, client_writer))]
            link.tasks.update(pumps)
            # When one direction ends (EOF or error), the other has nothing left to say either.
            await asyncio.wait(pumps, return_when=asyncio.FIRST_COMPLETED)
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            self.links.discard(link)
            link.close()

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Reads chunks and hands them to a writer task with their due time, so a delay holds
        each chunk without slowing the reading down, and order is kept."""
        queue: asyncio.Queue = asyncio.Queue()
        sender = asyncio.ensure_future(self._send(queue, writer))
        last_due = 0.0
        try:
            while True:
                data = await reader.read(CHUNK)
                await self.flowing.wait()  # blackhole: hold it (and stop reading) until pass
                due = max(last_due, time.monotonic() + self.mode.lag())
                last_due = due
                await queue.put((due, data))
                if not data:
                    break
            await sender
        finally:
            sender.cancel()

    async def _send(self, queue: asyncio.Queue, writer: asyncio.StreamWriter) -> None:
        while True:
            due, data = await queue.get()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            await self.flowing.wait()
            if not data:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(data)
            await writer.drain()


class FaultProxy:
    """Routes served by one event loop in a daemon thread; every method is thread-safe."""

    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._routes: Dict[str, Route] = {}
        self._thread = threading.Thread(target=self._loop.run_forever, name="fault-proxy",
                                        daemon=True)
        self._thread.start()
        self._control: Optional[asyncio.base_events.Server] = None

    def _call(self, coroutine):
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=10)

    # -- routes --
    def add_route(self, name: str, upstream_port: int, port: int = 0) -> Route:
        """Listens on 127.0.0.1:PORT (0: any free port, see route.port) and forwards to
        127.0.0.1:UPSTREAM_PORT."""
        async def add() -> Route:
            if name in self._routes:
                raise ValueError(f"fault proxy: route {name!r} exists already")
            route = Route(name, upstream_port)
            route.flowing.set()
            route.server = await asyncio.start_server(route.serve, LOOPBACK, port)
            route.port = route.server.sockets[0].getsockname()[1]
            self._routes[name] = route
            return route
        return self._call(add())

    def route(self, name: str) -> Route:
        if name not in self._routes:
            raise KeyError(f"fault proxy: no route {name!r} (routes: {', '.join(self._routes)})")
        return self._routes[name]

    def set_mode(self, name: str, mode: str, delay_ms: float = 0, jitter_ms: float = 0) -> None:
        """pass | delay (DELAY_MS, JITTER_MS) | drop | blackhole."""
        if mode not in MODES:
            raise ValueError(f"fault proxy: unknown mode {mode!r}; modes: {', '.join(MODES)}")
        if mode == "delay" and (delay_ms < 0 or jitter_ms < 0):
            raise ValueError("fault proxy: delay and jitter must not be negative")
        route = self.route(name)

        async def apply() -> None:
            route.mode = Mode(mode, float(delay_ms), float(jitter_ms))
            if mode == "blackhole":
                route.flowing.clear()
            else:
                route.flowing.set()
        self._call(apply())

    def cut(self, name: str) -> int:
        """Closes every open connection of the route; returns how many."""
        route = self.route(name)

        async def cut_all() -> int:
            links = list(route.links)
            for link in links:
                route.links.discard(link)
                link.close()
            return len(links)
        return self._call(cut_all())

    def status(self) -> Dict[str, dict]:
        async def collect():
            return {name: route.status() for name, route in self._routes.items()}
        return self._call(collect())

    # -- the HTTP control channel --
    def serve_control(self, port: int = 0) -> int:
        """Starts the control channel on 127.0.0.1:PORT; returns its port. GET / is the status;
        GET /ROUTE/MODE?delay_ms=..&jitter_ms=.. sets a mode; GET /ROUTE/cut cuts."""
        async def start() -> int:
            self._control = await asyncio.start_server(self._control_request, LOOPBACK, port)
            return self._control.sockets[0].getsockname()[1]
        return self._call(start())

    async def _control_request(self, reader, writer) -> None:
        try:
            request_line = (await reader.readline()).decode("latin-1").split()
            while (await reader.readline()) not in (b"\r\n", b"\n", b""):
                pass  # headers: nothing we need
            status, body = await asyncio.get_running_loop().run_in_executor(
                None, self.control, request_line[1] if len(request_line) > 1 else "/")
        except Exception as error:  # noqa: BLE001 - the client is told, the proxy carries on
            status, body = 500, {"error": str(error)}
        payload = (json.dumps(body, indent=1) + "\n").encode()
        writer.write(f"HTTP/1.0 {status} {'OK' if status == 200 else 'Error'}\r\n"
                     f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
                     "Connection: close\r\n\r\n".encode() + payload)
        await writer.drain()
        writer.close()

    def control(self, target: str):
        """One control request, e.g. "/h1-n1/delay?delay_ms=200": (http status, JSON body)."""
        url = urllib.parse.urlsplit(target)
        parts = [p for p in url.path.split("/") if p]
        query = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
        try:
            if not parts:
                return 200, self.status()
            if len(parts) != 2:
                return 404, {"error": "use /, /ROUTE/cut or /ROUTE/MODE (modes: "
                                      + ", ".join(MODES) + ")"}
            name, verb = parts
            if verb == "cut":
                return 200, {"route": name, "cut": self.cut(name)}
            self.set_mode(name, verb, float(query.get("delay_ms", query.get("ms", 0))),
                          float(query.get("jitter_ms", 0)))
            return 200, {name: self.route(name).status()}
        except (KeyError, ValueError) as error:
            return 400, {"error": str(error).strip("'\"")}

    def close(self) -> None:
        """Closes every listener and connection and stops the thread."""
        async def shutdown() -> None:
            servers = [r.server for r in self._routes.values()] + [self._control]
            for route in self._routes.values():
                route.flowing.set()
                for link in list(route.links):
                    link.close()
            for server in servers:
                if server is not None:
                    server.close()
        if self._loop.is_running():
            self._call(shutdown())
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            if pending:
                self._loop.run_until_complete(asyncio.wait(pending))
            self._loop.close()

    def __enter__(self) -> "FaultProxy":
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


# -- command line ---------------------------------------------------------------------------------
def _serve(args) -> int:
    proxy = FaultProxy()
    for spec in args.route:
        name, _, ports = spec.partition("=")
        listen, _, upstream = ports.partition(":")
        if not (name and listen.isdigit() and upstream.isdigit()):
            sys.exit(f"fault_proxy: --route wants NAME=LISTEN_PORT:UPSTREAM_PORT, got {spec!r}")
        proxy.add_route(name, int(upstream), int(listen))
    port = proxy.serve_control(args.control)
    print(json.dumps({"control": port, "routes": proxy.status()}), flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    proxy.close()
    return 0


def _ctl(args) -> int:
    path = "/" if args.route is None else f"/{args.route}/{args.verb}"
    query = {k: v for k, v in (("delay_ms", args.delay_ms), ("jitter_ms", args.jitter_ms)) if v}
    url = f"http://{LOOPBACK}:{args.control}{path}" + (
        "?" + urllib.parse.urlencode(query) if query else "")
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            print(response.read().decode(), end="")
            return 0
    except urllib.error.HTTPError as error:
        print(error.read().decode(), end="", file=sys.stderr)
        return 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    verbs = parser.add_subparsers(dest="command", required=True)
    serve = verbs.add_parser("serve", help="run routes and the control channel until Ctrl-C")
    serve.add_argument("--control", type=int, default=0, help="control port (0: any, printed)")
    serve.add_argument("--route", action="append", default=[],
                       help="NAME=LISTEN_PORT:UPSTREAM_PORT (repeatable; LISTEN_PORT 0: any)")
    ctl = verbs.add_parser("ctl", help="drive a running proxy: ctl PORT [ROUTE VERB]")
    ctl.add_argument("control", type=int)
    ctl.add_argument("route", nargs="?")
    ctl.add_argument("verb", nargs="?", default="pass", help="pass|delay|drop|blackhole|cut")
    ctl.add_argument("--delay-ms", type=float, default=0)
    ctl.add_argument("--jitter-ms", type=float, default=0)
    args = parser.parse_args(argv)
    return _serve(args) if args.command == "serve" else _ctl(args)


if __name__ == "__main__":
    sys.exit(main())
