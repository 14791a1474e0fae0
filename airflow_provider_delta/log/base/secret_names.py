"""Which option and configuration names look like they hold a credential: the one rule.

Used where a value must not travel or be shown: a commit owner's configuration (stored in the table's
metadata, readable by all), options sent to another storage account, and connection options written
to task logs. Broad on purpose: a false positive costs a renamed key or a ``***`` in a log line, a false
negative leaks a secret. Azure connection strings hold the account key, so they count too, also in the SDKs'
camelCase (``connectionString``, ``SharedAccessSignature``); so do HTTP credentials (an ``Authorization`` or
``Cookie`` header, an ``auth`` value, a bearer token, an API key), a private key's ``passphrase`` (paramiko) and
any ``pass...`` or ``private...`` name.
"""
from __future__ import annotations

import re
from typing import Any, Iterable

_SECRET_NAME = re.compile(r"pass|pwd|secret|token|credential|key|sas|session|signature|conn_?str|connection_?string"
                          r"|auth|cookie|bearer|private|jwt|^sig$|^otp$", re.IGNORECASE)


def looks_like_secret(name: Any) -> bool:
    """True when the name suggests its value is a credential."""
    return bool(_SECRET_NAME.search(str(name)))


def secret_looking_keys(names: Iterable[Any]) -> list[str]:
    """The names (e.g. a mapping's keys) that look like they hold a secret, sorted."""
    return sorted(str(k) for k in names if looks_like_secret(k))
