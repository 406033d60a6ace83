"""What the broker itself says about queues, and faults timed from inside the broker node:
- queue_definitions(): each queue's type and arguments (rabbitmqctl list_queues);
- UnackedSampler: a queue's messages_unacknowledged, sampled densely while a test runs;
- CloseConnectionsTrigger: closes every client connection the moment a queue's ready count falls
  (or rises) to a threshold, i.e. at a chosen point in the middle of a stream;
- RetriesParkedFlag: creates a file the moment retries wait in the delay levels and their first
  deliveries are acked, i.e. the moment to kill a host that must get nothing back.

Why small processes inside the node: one rabbitmqctl call costs about a second on an idle machine
and 5-15 s on a busy one (an Erlang VM starts each time), so polling `list_queues` would see a
couple of moments of a two-second run, and `rabbitmqctl close_all_connections` issued "mid-stream"
may land after the stream has ended. Both helpers spawn a process on the broker node (through
`rabbitmqctl eval`) before the test starts warren; that process then reacts within milliseconds.
The sampler needs a classic queue: RabbitMQ 3.10 refreshes a quorum queue's counters only every
few seconds (its statistics interval). The trigger reads the ready count with rabbit_amqqueue:stat,
which asks the queue itself and is exact for both types.
"""

import re
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from testkit_broker import Broker
from testkit_env import wait_until

_ARGUMENT = re.compile(r'\{"([^"]+)",("(?:[^"\\]|\\.)*"|[^{}]*?)\}')


def _argument_value(text: str) -> Any:
    if text.startswith('"'):
        return text[1:-1]
    try:
        return int(text)
    except ValueError:
        return text


def queue_definitions(broker: Broker) -> Dict[str, Tuple[str, Dict[str, Any]]]:
    """{queue name: (type, {argument: value})} for every queue of the default vhost."""
    output = broker.rabbitmqctl("list_queues", "--quiet", "--no-table-headers",
                                "name", "type", "arguments")
    queues = {}
    for line in output.splitlines():
        fields = line.split("\t")
        if len(fields) != 3:
            continue
        name, queue_type, arguments = fields
        queues[name] = (queue_type, {key: _argument_value(value)
                                     for key, value in _ARGUMENT.findall(arguments)})
    return queues


def _erlang_binary(text: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9._:-]+", text):
        raise ValueError(f"UnackedSampler: queue name {text!r} needs quoting; use a plain name")
    return f'<<"{text}">>'


@dataclass
class UnackedSamples:
    count: int      # samples taken
    maximum: int    # the largest messages_unacknowledged seen
    nonzero: int    # samples with at least one unacknowledged message
    missing: int    # samples where the queue could not be read


class UnackedSampler:
    """Samples messages_unacknowledged of one (classic) queue inside the broker node."""

    def __init__(self, broker: Broker, queue: str, interval_ms: int = 5, max_seconds: int = 300):
        self.broker = broker
        self.queue = queue
        self.interval_ms = interval_ms
        self.max_samples = max_seconds * 1000 // interval_ms
        self.name = f"warren_itest_sampler_{uuid.uuid4().hex[:12]}"

    def start(self) -> "UnackedSampler":
        """Returns once the sampling process runs on the node."""
        self.broker.rabbitmqctl("eval", f"""
            QName = rabbit_misc:r(<<"/">>, queue, {_erlang_binary(self.queue)}),
            Sample = fun() ->
                case rabbit_amqqueue:lookup(QName) of
                    {{ok, Q}} ->
                        try rabbit_amqqueue:info(Q, [messages_unacknowledged]) of
                            [{{_, U}}] when is_integer(U) -> U;
                            _ -> missing
                        catch _:_ -> missing end;
                    _ -> missing
                end
            end,
            Loop = fun L(Count, Max, NonZero, Missing) ->
                receive
                    {{stop, From}} -> From ! {{samples, Count, Max, NonZero, Missing}}
                after {self.interval_ms} ->
                    if Count >= {self.max_samples} -> gave_up;  % a test that never stopped it
                       true ->
                           case Sample() of
                               missing -> L(Count + 1, Max, NonZero, Missing + 1);
                               0 -> L(Count + 1, Max, NonZero, Missing);
                               U -> L(Count + 1, max(Max, U), NonZero + 1, Missing)
                           end
                    end
                end
            end,
            Pid = spawn(fun() -> Loop(0, 0, 0, 0) end),
            register({self.name}, Pid),
            ok.""")
        return self

    def stop(self) -> UnackedSamples:
        """Stops the sampling process and returns what it saw."""
        output = self.broker.rabbitmqctl("eval", f"""
            {self.name} ! {{stop, self()}},
            receive {{samples, C, M, N, X}} -> {{samples, C, M, N, X}}
            after 10000 -> no_answer end.""")
        found = re.search(r"\{samples,(\d+),(\d+),(\d+),(\d+)\}", output.replace(" ", ""))
        if not found:
            raise RuntimeError(f"UnackedSampler {self.name}: unexpected answer {output!r}")
        return UnackedSamples(*(int(value) for value in found.groups()))


class CloseConnectionsTrigger:
    """Once armed, closes every client connection on the node (as `rabbitmqctl
    close_all_connections REASON` does) as soon as QUEUE holds at most READY_AT_MOST ready
    messages (a queue being consumed), or at least READY_AT_LEAST (a queue being filled). Fires
    once; gives up after max_seconds."""

    def __init__(self, broker: Broker, queue: str, reason: str, *,
                 ready_at_most: Optional[int] = None, ready_at_least: Optional[int] = None,
                 interval_ms: int = 5, max_seconds: int = 300):
        if '"' in reason or "\\" in reason:
            raise ValueError("CloseConnectionsTrigger: the reason may not contain quotes")
        if (ready_at_most is None) == (ready_at_least is None):
            raise ValueError("CloseConnectionsTrigger: give ready_at_most or ready_at_least")
        self.broker = broker
        self.queue = queue
        self.fires_when = (f"R =< {ready_at_most}" if ready_at_least is None
                           else f"R >= {ready_at_least}")
        self.reason = reason
        self.interval_ms = interval_ms
        self.max_polls = max_seconds * 1000 // interval_ms
        self.name = f"warren_itest_trigger_{uuid.uuid4().hex[:12]}"

    def arm(self) -> "CloseConnectionsTrigger":
        """Returns once the watching process runs on the node."""
        self.broker.rabbitmqctl("eval", f"""
            QName = rabbit_misc:r(<<"/">>, queue, {_erlang_binary(self.queue)}),
            Ready = fun() ->
                case rabbit_amqqueue:lookup(QName) of
                    {{ok, Q}} ->
                        try rabbit_amqqueue:stat(Q) of
                            {{ok, R, _Consumers}} -> R;
                            _ -> unknown
                        catch _:_ -> unknown end;
                    _ -> unknown
                end
            end,
            Loop = fun L(Polls) ->
                receive disarm -> disarmed
                after {self.interval_ms} ->
                    case Ready() of
                        R when is_integer(R), {self.fires_when} ->
                            rabbit_networking:close_connections(
                                rabbit_networking:connections(), "{self.reason}"),
                            fired;
                        _ when Polls >= {self.max_polls} -> gave_up;
                        _ -> L(Polls + 1)
                    end
                end
            end,
            register({self.name}, spawn(fun() -> Loop(0) end)),
            ok.""")
        return self

    def disarm(self) -> None:
        """Stops the watching process if it has not fired (harmless when it has)."""
        self.broker.rabbitmqctl("eval", f"""
            case whereis({self.name}) of undefined -> ok; Pid -> Pid ! disarm, ok end.""")


class RetriesParkedFlag:
    """Creates FILE from inside the node the moment the retry delay-level queues DELAY_QUEUES hold
    at least N ready messages between them and the channels consuming QUEUE have no
    unacknowledged delivery left: the retries wait in the broker and their first deliveries are
    acked, so a host killed now loses nothing and gets nothing back. Arm it before the traffic
    (arming costs a rabbitmqctl call); afterwards, waiting for the file costs the test nothing,
    where asking rabbitmqctl (two calls, 5-15 s each on a busy machine) could outlast the delay."""

    def __init__(self, broker: Broker, queue: str, delay_queues: List[str], n: int, file: Path,
                 interval_ms: int = 5, max_seconds: int = 120):
        self.broker = broker
        self.queue = queue
        self.delay_queues = delay_queues
        self.n = n
        self.file = Path(file)
        self.interval_ms = interval_ms
        self.max_polls = max_seconds * 1000 // interval_ms
        self.name = f"warren_itest_parked_{uuid.uuid4().hex[:12]}"
        if not re.fullmatch(r"[A-Za-z0-9._/-]+", str(self.file)):
            raise ValueError(f"RetriesParkedFlag: file {self.file} needs quoting; use a plain path")

    def arm(self) -> "RetriesParkedFlag":
        """Returns once the watching process runs on the node."""
        delay_queues = ", ".join(_erlang_binary(name) for name in self.delay_queues)
        self.broker.rabbitmqctl("eval", f"""
            Ready = fun(Name) ->
                case rabbit_amqqueue:lookup(rabbit_misc:r(<<"/">>, queue, Name)) of
                    {{ok, Q}} ->
                        try rabbit_amqqueue:stat(Q) of {{ok, R, _}} -> R; _ -> 0
                        catch _:_ -> 0 end;
                    _ -> 0
                end
            end,
            QName = rabbit_misc:r(<<"/">>, queue, {_erlang_binary(self.queue)}),
            Unacked = fun() ->
                case [proplists:get_value(channel_pid, C)
                      || C <- rabbit_amqqueue:consumers_all(<<"/">>),
                         proplists:get_value(queue_name, C) =:= QName] of
                    [] -> no_consumer;
                    Channels ->
                        lists:sum([try rabbit_channel:info(P, [messages_unacknowledged]) of
                                       [{{_, U}}] -> U; _ -> 1
                                   catch _:_ -> 1 end || P <- Channels])
                end
            end,
            Parked = fun() ->
                lists:sum([Ready(N) || N <- [{delay_queues}]]) >= {self.n}
                    andalso Unacked() =:= 0
            end,
            Loop = fun L(Polls) ->
                receive disarm -> disarmed
                after {self.interval_ms} ->
                    case catch Parked() of
                        true -> file:write_file("{self.file}", <<"parked">>), parked;
                        _ when Polls >= {self.max_polls} -> gave_up;
                        _ -> L(Polls + 1)
                    end
                end
            end,
            register({self.name}, spawn(fun() -> Loop(0) end)),
            ok.""")
        return self

    def wait(self, timeout: float) -> None:
        wait_until(self.file.exists, timeout, interval=0.005,
                   what=f"{self.n} retries parked in the delay levels and their first deliveries "
                        f"from {self.queue} acked (flag file {self.file})")

    def disarm(self) -> None:
        """Stops the watching process if it has not fired (harmless when it has)."""
        self.broker.rabbitmqctl("eval", f"""
            case whereis({self.name}) of undefined -> ok; Pid -> Pid ! disarm, ok end.""")
