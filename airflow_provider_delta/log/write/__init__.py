"""The write engine: write planning, transactions, commit plans, the committer, conflicts, conversions. Imports the tiers below it (a commit may write the automatic checkpoint)."""
