"""Task decorators: ``@task.delta_snapshot`` (see :mod:`.delta_snapshot`)."""
from .delta_snapshot import delta_snapshot_task

__all__ = ["delta_snapshot_task"]
