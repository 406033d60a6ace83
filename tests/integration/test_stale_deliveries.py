"""A delivery whose connection is lost while its handler runs is stale: the broker has already put
the message back and sends it again on the next connection. Whatever the handler's outcome, warren
must not carry it out for the stale copy as well (its ack could not land anyway), or the message's
effect happens twice: here, a dead letter for each copy."""

from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_config import classic_queue, scripted_worker, warren_config, warren_options
from warren_testkit import unique_name, wait_until


def test_ConnectionLostWhileTheHandlerRuns_ItsDeadLetterIsPublishedOnceNotOncePerCopy(
        broker, created, warren, record_file, tmp_path):
    dead_letters = created.exchange("stale-dlx")
    queue, dead_letter_queue = created.queue("stale"), created.queue("stale-dlq")
    host_name = unique_name("itest-stale")
    # The handler records its call, then waits for this file: the test closes the connections
    # while the first call is certainly running, however slow the machine (no sleep to outlast).
    release = tmp_path / "release-the-handler"
    worker = scripted_worker("stale", queue, record_file, prefetch=1,
                             dead_letter_queue=dead_letter_queue)
    worker["settings"]["gate_file"] = str(release)
    config = warren_config(
        host={"name": host_name},
        exchanges=[{"name": dead_letters, "type": "fanout"}],
        queues=[classic_queue(queue, dead_letter_exchange=dead_letters)],
        workers=[worker],
        broker={"reconnect_initial": "100ms", "reconnect_max": "500ms"})
    process = warren(config, **warren_options())
    process.wait_ready(timeout=30)
    [message_id] = broker.publish_many("", queue, 1, prefix="stale",
                                       headers={"x-test-action": "dead_letter:poison"})

    record_file.wait_for_count(1, timeout=60)  # the first call has begun and waits for `release`
    lost = broker.close_connections_of(host_name, "stale delivery test")
    assert len(lost) == 2, f"consumer and publisher connections of {host_name}: {lost}"
    # Release the call only once warren has connected again: it has then certainly seen the loss
    # (its delivery is stale), and the broker sends the message again on the new connection.
    wait_until(lambda: len(broker.connections_of(host_name) - lost) == 2, 60, interval=0.5,
               what=lambda: f"{host_name} connected again: {process.describe()}")
    assert record_file.records()[1:] == [], "a second call while the first still runs"
    release.write_text("")

    # The second call comes once the first returned (one handler thread).
    calls = record_file.wait_for_count(2, timeout=60)
    assert [call.message_id for call in calls] == [message_id, message_id]
    assert calls[1].redelivered, calls

    wait_until(lambda: broker.message_count(dead_letter_queue) >= 1, 30,
               what=lambda: f"the dead letter in {dead_letter_queue}: {process.describe()}")
    wait_until(lambda: broker.queue_counts(queue) == (0, 0), 30,
               what=lambda: f"{queue} empty and acked: {broker.queue_counts(queue)}")
    assert process.terminate() == 0, process.describe()
    # The host is gone: nothing more can come. One letter expected, then a settle period from it in
    # which a second one would show.
    letters = broker.drain(dead_letter_queue, expect=1, settle=2)
    assert [letter.message_id for letter in letters] == [message_id], \
        f"{len(letters)} dead letters for one message: {process.describe()}"
    assert len(record_file.records()) == 2, record_file.records()
