"""Property-based test of the writer: random appends, overwrites, deletes with and without deletion
vectors and property changes, many interleaved with a second writer that commits between our
snapshot and our commit. After every step our reader, deltalake and the logical model agree, and
the rows are those of a serial order of the committed operations (tests/log/property_writers.py).

``DELTA_PROPERTY_EXAMPLES`` sets the number of examples (default 15, well under a minute; a stress
run sets it to hundreds).
"""
from __future__ import annotations

import tempfile

from hypothesis import HealthCheck, event, given, settings

from property_writers import World, examples, steps


@settings(max_examples=examples("DELTA_PROPERTY_EXAMPLES", 15), deadline=None,
          suppress_health_check=[HealthCheck.too_slow], derandomize=False)
@given(steps)
def test_every_step_leaves_a_valid_log_with_serializable_rows(sequence):
    with tempfile.TemporaryDirectory() as root:
        world = World(f"{root}/t")
        outcomes = []
        for ours, theirs in sequence:
            outcomes.append(world.step(ours, theirs))
            event(f"{ours.kind} vs {theirs.kind if theirs else '-'}: {outcomes[-1].split(' (')[0][:60]}")
            world.check()
        assert all(o == "ok" or o.startswith(("conflict: ", "refused: ")) for o in outcomes)
