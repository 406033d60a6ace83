"""A delivery whose connection is lost while its handler runs is stale: the broker has already put
the message back and sends it again on the next connection. Whatever the handler's outcome, warren
must not carry it out for the stale copy as well (its ack could not land anyway), or the message's
effect happens twice: here, a dead letter for each copy."""

from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_config import classic_queue, scripted_worker, warren_config, warren_options
from warren_testkit import unique_name, wait_until

# Long enough for two rabbitmqctl calls to land while the first call sleeps.
HANDLER_MS = 6000


def close_connections_of(broker, host_name: str) -> int:
    """Closes the connections of the warren whose [host] name is HOST_NAME (they are named
    "warren consumer (HOST_NAME)" and so on), not those of tests running beside this one."""
    listing = broker.rabbitmqctl("list_connections", "--quiet", "--no-table-headers", "pid",
                                 "client_properties")  # they hold the connection_name
    pids = [line.split("\t")[0] for line in listing.splitlines() if f"({host_name})" in line]
    for pid in pids:
        broker.rabbitmqctl("close_connection", pid, "stale delivery test")
    return len(pids)


def test_ConnectionLostWhileTheHandlerRuns_ItsDeadLetterIsPublishedOnceNotOncePerCopy(
        broker, created, warren, record_file):
    dead_letters = created.exchange("stale-dlx")
    queue, dead_letter_queue = created.queue("stale"), created.queue("stale-dlq")
    host_name = unique_name("itest-stale")
    config = warren_config(
        host={"name": host_name},
        exchanges=[{"name": dead_letters, "type": "fanout"}],
        queues=[classic_queue(queue, dead_letter_exchange=dead_letters)],
        workers=[scripted_worker("stale", queue, record_file, prefetch=1, sleep_ms=HANDLER_MS,
                                 dead_letter_queue=dead_letter_queue)],
        broker={"reconnect_initial": "100ms", "reconnect_max": "500ms"})
    process = warren(config, **warren_options())
    process.wait_ready(timeout=30)
    [message_id] = broker.publish_many("", queue, 1, prefix="stale",
                                       headers={"x-test-action": "dead_letter:poison"})

    record_file.wait_for_count(1, timeout=30)  # the first call has begun: it sleeps, then
    assert close_connections_of(broker, host_name) == 2  # asks for a dead letter
    # The broker sent the message again on the new connection: a second call, once the first
    # returned (one handler thread). Had the close come too late there would be no second call.
    calls = record_file.wait_for_count(2, timeout=HANDLER_MS / 1000 * 2 + 30)
    assert [call.message_id for call in calls] == [message_id, message_id]
    assert calls[1].redelivered, calls

    wait_until(lambda: broker.message_count(dead_letter_queue) >= 1, 30,
               what=lambda: f"the dead letter in {dead_letter_queue}: {process.describe()}")
    wait_until(lambda: broker.queue_counts(queue) == (0, 0), 30,
               what=lambda: f"{queue} empty and acked: {broker.queue_counts(queue)}")
    assert process.terminate() == 0, process.describe()
    letters = broker.drain(dead_letter_queue, timeout=0.5)
    assert [letter.message_id for letter in letters] == [message_id], \
        f"{len(letters)} dead letters for one message: {process.describe()}"
