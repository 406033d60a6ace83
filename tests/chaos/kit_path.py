"""Puts the integration-test kit (tests/integration/support, and tests/integration for
test_outbox_kit) on sys.path: the chaos tools reuse it. Import it before any testkit_* module."""

import sys
from pathlib import Path

_TESTS = Path(__file__).resolve().parents[1]
for _kit in (_TESTS / "integration", _TESTS / "integration" / "support"):
    if str(_kit) not in sys.path:
        sys.path.insert(0, str(_kit))
