"""Randomized waits before a retry (a committer that lost a race, a listing the log outran).

The randomness comes from ``os.urandom``: the ``random`` module costs about a millisecond
to import on every cold read, for a value only a retry on a busy table needs.
"""
from __future__ import annotations

import os
import time


def sleep_jittered(limit_s: float) -> None:
    """Sleep a uniformly random time in ``[0, limit_s)``, so that retrying processes spread out."""
    time.sleep(limit_s * int.from_bytes(os.urandom(2), "big") / 65536)
