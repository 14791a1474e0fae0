"""Maintenance over the log: checkpoint writing, log compaction, metadata cleanup, vacuum. Imports log.base and log.read."""
