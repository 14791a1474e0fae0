"""Table properties that name a commit owner, and the no-secrets rule for its conf.

The owner's configuration (``delta.managedCommit.commitOwnerConf``) is written into
the table's metadata, so anyone who can list the table's storage can read it. The
RFC therefore forbids secrets in it; this module enforces that with a simple,
deliberately broad rule on key names, both when an owner describes itself and
when a table is read.
"""
from __future__ import annotations

import json
from typing import Any

from ..errors import DeltaError, InvalidArgumentError, InvalidTableStateError
from ..features import MANAGED_OWNER_CONF_PROPERTY
from ..secret_names import secret_looking_keys

def check_owner_conf(conf: Any, error: type[DeltaError] = InvalidArgumentError) -> dict[str, str]:
    """Return ``conf`` as a string-to-string dict, or raise ``error`` if it is not one or holds secrets."""
    if not isinstance(conf, dict):
        raise error(f"a commit owner conf must be a JSON object of strings, got {type(conf).__name__}")
    bad_types = sorted(str(k) for k, v in conf.items() if not isinstance(k, str) or not isinstance(v, str))
    if bad_types:
        raise error(f"a commit owner conf maps strings to strings; these keys do not: {bad_types}")
    secrets = secret_looking_keys(conf)
    if secrets:
        raise error(
            f"commit owner conf keys {secrets} look like secrets; the conf is stored in the table's "
            "metadata where every reader can see it. Pass credentials through the environment or an "
            "Airflow connection instead")
    return dict(conf)


def parse_owner_conf(text: str | None) -> dict[str, str]:
    """Decode the ``commitOwnerConf`` table property (absent means an empty conf)."""
    if text is None or text == "":
        return {}
    try:
        conf = json.loads(text)
    except ValueError as e:
        raise InvalidTableStateError(f"table property {MANAGED_OWNER_CONF_PROPERTY} is not valid JSON: {e}") from None
    return check_owner_conf(conf, InvalidTableStateError)


def dumps_owner_conf(conf: dict[str, str]) -> str:
    """Encode an owner conf for the table property (sorted keys, so equal confs are equal strings)."""
    return json.dumps(check_owner_conf(conf), sort_keys=True, separators=(",", ":"))
