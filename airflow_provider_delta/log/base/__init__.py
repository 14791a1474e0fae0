"""The ground tier of the Delta log: errors, value classes, names, actions, features, schema, storage, commit owners. Imports nothing of log/ above it."""
