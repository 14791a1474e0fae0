"""The read engine: listing, log segments, replay, checkpoints and commits read, snapshots, history, time travel, change feed. Imports only log.base."""
