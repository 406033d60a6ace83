"""SDK 1.2's publish options, labelled plugin metrics and debug lines against the real broker
(issue 22, "SDK 1.1 additions").

A handler notifies an exchange that no queue is bound to. Published with mandatory = false the
broker drops the message and confirms it: the publish succeeds, nothing is returned, the message
is acked. The same publish, mandatory, is returned unroutable: the publish fails (PublishError),
and the message is dead-lettered saying so. The scripted plugin counts its calls in the labelled
counter warren_plugin_scripted_actions_total{action} and logs each at debug, which a host at
[log] level debug writes.
"""

from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_config import classic_queue, scripted_worker, warren_config, warren_options
from testkit_metrics import scrape, value
from testkit_traffic import Tally
from warren_testkit import free_port, wait_until

NOTES = 5


def test_NotMandatoryPublishToAnExchangeWithNoQueue_SucceedsAndMandatoryFails(
        broker, created, warren, record_file):
    notes = created.exchange("notmand-notes")  # no queue is ever bound to it
    notify_queue = created.queue("notmand-notify")
    strict_queue = created.queue("notmand-strict")
    strict_dead = created.queue("notmand-strict-dead")
    strict_dlx = created.exchange("notmand-strict-dlx")
    metrics = f"127.0.0.1:{free_port()}"
    config = warren_config(
        exchanges=[{"name": notes, "type": "topic"}, {"name": strict_dlx, "type": "fanout"}],
        queues=[classic_queue(notify_queue), classic_queue(strict_queue)],
        workers=[
            scripted_worker("notifier", notify_queue, record_file,
                            default_action=f"notify:{notes}:note.sent",
                            retry={"max_attempts": 1}, dead_letter_exchange=strict_dlx,
                            dead_letter_queue=strict_dead),
            scripted_worker("strict", strict_queue, record_file,
                            default_action=f"publish:{notes}:note.sent",
                            retry={"max_attempts": 1}, dead_letter_exchange=strict_dlx,
                            dead_letter_queue=strict_dead)],
        metrics={"enabled": True, "listen": metrics},
        log={"level": "debug"})
    process = warren(config, **warren_options())
    process.wait_ready(timeout=30)

    note_ids = broker.publish_many("", notify_queue, NOTES, prefix="notmand-note")
    strict_id = broker.publish("", strict_queue, "strict")
    wait_until(lambda: broker.message_count(strict_dead) == 1, 30,
               what=lambda: f"the mandatory publish's message dead-lettered: {process.describe()}")
    wait_until(lambda: value(scrape(metrics), "warren_messages_settled_total", worker="notifier",
                             outcome="ack") == NOTES, 30,
               what=lambda: f"{NOTES} notifications acked: {process.describe()}")

    # Not mandatory: each note handled once, acked, its publish confirmed and nothing returned.
    handled = [r.message_id for r in record_file.records() if r.worker == "notifier"]
    Tally.of(note_ids, handled).assert_exactly_once()
    series = scrape(metrics)
    assert value(series, "warren_published_total", exchange=notes, result="confirmed") == NOTES
    assert value(series, "warren_messages_settled_total", worker="notifier",
                 outcome="dead_letter") == 0
    # Mandatory: returned unroutable, the publish failed, the message dead-lettered saying why.
    assert value(series, "warren_published_total", exchange=notes, result="returned") == 1
    dead = broker.drain(strict_dead, expect=1)
    assert [m.message_id for m in dead] == [strict_id]
    assert "no queue is bound" in str(dead[0].headers.get("x-warren-error")), dead[0].headers
    assert broker.message_count(strict_dead) == 0

    # The labelled counter, one series per worker and action.
    assert value(series, "warren_plugin_scripted_actions_total", worker="notifier",
                 plugin="scripted", action="notify") == NOTES
    assert value(series, "warren_plugin_scripted_actions_total", worker="strict",
                 plugin="scripted", action="publish") == 1
    # log_debug, written at [log] level debug.
    logs = process.logs()
    assert f"scripted: notify:{notes}:note.sent" in logs, process.describe()
