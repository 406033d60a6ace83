"""20,000 messages through one worker with 8 handler threads and prefetch 64, published while warren
consumes them: every id is handled exactly once, warren stops cleanly, and - when WARREN_BIN is a
ThreadSanitizer build (the tsan preset runs this test) - TSan reports no data race or deadlock.

TSAN_OPTIONS gets halt_on_error=1 (the first report ends warren, so the test fails at once) and
second_deadlock_stack=1; whatever the caller already set (e.g. suppressions) is kept. A TSan
report in warren's stderr fails the test even if warren somehow exited 0. In other builds the
same test is a plain stress test."""

import os
from pathlib import Path

from testkit_cleanup import created  # noqa: F401,F811 (a fixture)
from testkit_config import quorum_queue, scripted_worker, warren_config, warren_options
from testkit_traffic import Tally, publish_bulk
from testkit_warren import assert_no_sanitizer_report
from warren_testkit import env, require_services, wait_until

MESSAGES = 20_000


def tsan_options() -> str:
    existing = os.environ.get("TSAN_OPTIONS", "")
    return ":".join(part for part in (existing, "halt_on_error=1", "second_deadlock_stack=1")
                    if part)


def is_tsan_build(binary: str) -> bool:
    return b"__tsan_init" in Path(binary).read_bytes()


def test_TwentyThousandMessages_EightThreadsPrefetch64_EachHandledExactlyOnceWithoutRaces(
        broker, created, warren, record_file):
    require_services("rabbitmq", "warren")
    queue = created.queue("tsan-stress")
    config = warren_config(
        queues=[quorum_queue(queue)],
        workers=[scripted_worker("tsan-stress", queue, record_file, prefetch=64, concurrency=8,
                                 default_action="ack")])
    process = warren(config, **warren_options(env_overrides={"TSAN_OPTIONS": tsan_options()}))
    process.wait_ready(timeout=60)

    ids = publish_bulk("", queue, MESSAGES, prefix="tsan")

    def all_handled():
        if not process.running():
            raise AssertionError(f"warren exited: {process.describe()}")
        return Tally.of(ids, record_file.ids()).complete and broker.message_count(queue) == 0

    wait_until(all_handled, 300, interval=0.5,
               what=lambda: Tally.of(ids, record_file.ids()).summary())
    exit_code = process.terminate(timeout=60)

    build = "TSan" if is_tsan_build(env("WARREN_BIN")) else "plain"
    assert_no_sanitizer_report(process.stderr(), f"warren ({build} build)")
    assert exit_code == 0, process.describe()
    Tally.of(ids, record_file.ids()).assert_exactly_once()
    assert broker.message_count(queue) == 0
