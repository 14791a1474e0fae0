"""How a Spark job's secrets reach its driver: per master and deploy mode, never on a command line.

Our Spark operators hand their jobs secrets (storage credentials, the commit owner's and the
catalog's database URLs) as JSON in environment variables (:data:`SECRET_ENV_NAMES`). The Spark
provider's ``SparkSubmitHook`` is not safe for them as ``env_vars`` on YARN and Kubernetes: there it
writes them on the spark-submit command line (``--conf spark.yarn.appMasterEnv.NAME=VALUE``,
``--conf spark.kubernetes.driverEnv.NAME=VALUE``), which ``ps`` shows to every user of the worker
and whose masking in the logged "Spark-Submit cmd" stops at the first space of the JSON. So each
secret takes the route that fits where the driver runs (the hook's own ``_is_yarn``,
``_is_kubernetes`` and deploy mode decide, as they decide what it does with ``env_vars``):

==========================  ==============  ==========================================================
master, deploy mode         driver runs     route of ``NAME``
==========================  ==============  ==========================================================
``local``, ``spark://``     this worker     ``env_vars``: the hook sets them on the spark-submit
client                                      process (its environment, not its arguments)
``k8s://`` client           this worker     the spark-submit process's environment, set directly
                                            (the hook's ``driverEnv`` confs would not reach a
                                            client-mode driver anyway)
``yarn`` client             this worker     a file (mode 0600, in a 0700 directory) named by
                                            ``NAME_FILE=<absolute path>``
``yarn`` cluster            a YARN          the same file, shipped with ``--files`` (YARN puts it in
                            container       the driver's working directory); ``NAME_FILE=<name>``
``k8s://`` cluster          a pod           refused (:class:`DriverSecretsError`) unless ``conf``
                                            names a Kubernetes secret for it:
                                            ``spark.kubernetes.driver.secretKeyRef.NAME``
``spark://`` cluster        a worker        refused: the hook passes no environment there and
                                            ``--files`` are not shipped to the driver
==========================  ==============  ==========================================================

The deploy mode is the one spark-submit will use (:func:`_pin_deploy_mode`: ``spark.submit.deployMode``
in ``conf`` and ``DEPLOY_MODE`` count, and it is pinned with ``--deploy-mode``); standalone cluster mode is
judged by Spark's reading of the master URL (``spark://...``), not the hook's substring tests. Database
URLs among the secrets are registered with Airflow's secrets masker (:func:`_mask`).

The driver reads ``NAME``, else the file ``NAME_FILE`` names
(:func:`~..spark.delta_job.env_json_object`). The files are removed when the submission ends
(:meth:`DriverSecrets.close`); those of a task killed with SIGKILL are removed by this user's next
submission on the worker once a day old and named by no running process (:func:`remove_stale_secrets`).
Kubernetes cluster mode is refused rather than given a file: ``--files`` would upload it to
``spark.kubernetes.file.upload.path``, a shared location nobody cleans.
"""
from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
import uuid
from typing import Any

from ..hooks.arguments import DeltaArgumentError
from ..spark.delta_job import ENV_HADOOP_CONF, FILE_SUFFIX
from ..spark.job_args import SECRETS_ENV

#: the environment variables by which our operators hand a job secrets
SECRET_ENV_NAMES = (SECRETS_ENV, ENV_HADOOP_CONF)
#: ``conf`` prefix naming the Kubernetes secret (``<secret>:<key>``) a cluster-mode driver takes ``NAME`` from
K8S_SECRET_REF = "spark.kubernetes.driver.secretKeyRef."
#: the prefix of the folder (in the temporary directory) holding one submission's secrets files
SECRETS_DIR_PREFIX = "delta-spark-secrets-"
#: a secrets folder this old is one a killed task (SIGKILL: no ``close``) left behind; the next
#: submission of this user on the worker removes it (a driver reads its file when it starts)
STALE_SECRETS_HOURS = 24


class DriverSecretsError(DeltaArgumentError):
    """The job's secrets cannot reach its driver without passing through a command line.

    Raised before anything is submitted; fails the task without retry (the settings decide it).
    """


class DriverSecrets:
    """The secret environment variables of one submission, routed for its hook; owns their files.

    :meth:`route` moves the names of :data:`SECRET_ENV_NAMES` out of the hook's ``env_vars`` onto
    the route of its master (module docstring); :meth:`close` removes the files it wrote.
    """

    def __init__(self, log: Any) -> None:
        self.log = log
        self._dir: str | None = None

    def __enter__(self) -> "DriverSecrets":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def route(self, hook: Any) -> Any:
        """Route the secrets in ``hook._env_vars`` for ``hook``'s master; returns ``hook``."""
        env = dict(hook._env_vars or {})
        secrets = {name: str(env.pop(name)) for name in SECRET_ENV_NAMES if env.get(name)}
        if not secrets:
            return hook
        _mask(secrets)
        master = hook._connection["master"]
        cluster = _pin_deploy_mode(hook, env) == "cluster"
        if cluster and master.startswith("spark"):      # Spark's reading of the URL, not the hook's substrings
            self._refuse_standalone_cluster(secrets, master)
        if hook._is_kubernetes and cluster:
            self._kubernetes_refs(hook, secrets)
        elif hook._is_kubernetes:       # the driver is this process's grandchild: its environment
            hook._env = {**{k: str(v) for k, v in env.items()}, **(hook._env or {}), **secrets}
        elif hook._is_yarn:
            env.update(self._files(hook, secrets, ship=cluster))
        elif cluster:
            self._refuse_standalone_cluster(secrets, master)
        else:                           # the hook sets env_vars on the spark-submit process, not its argv
            env.update(secrets)
        hook._env_vars = env
        return hook

    @staticmethod
    def _refuse_standalone_cluster(secrets: dict[str, str], master: str) -> None:
        raise DriverSecretsError(
            f"the job's secrets ({', '.join(sorted(secrets))}: storage credentials or database URLs of the "
            f"delta connection) cannot reach a driver in standalone cluster mode ({master}) without a "
            "command line: spark-submit passes it no environment and ships it no local file. Run in "
            "client mode (deploy_mode='client'), or give the cluster the credentials and the delta "
            "connection none. Nothing was submitted")

    def _files(self, hook: Any, secrets: dict[str, str], ship: bool) -> dict[str, str]:
        """Each secret in a 0600 file; ``NAME_FILE`` names it (its path, or with ``ship`` its base name,
        the file going to the driver's working directory with ``--files``)."""
        if self._dir is None:
            remove_stale_secrets()
            self._dir = tempfile.mkdtemp(prefix=SECRETS_DIR_PREFIX)   # mode 0700
        env: dict[str, str] = {}
        shipped: list[str] = []
        for name, value in secrets.items():
            path = os.path.join(self._dir, f"delta-secrets-{uuid.uuid4().hex}-{name.lower()}.json")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(value)
            env[name + FILE_SUFFIX] = os.path.basename(path) if ship else path
            shipped.append(path)
        if ship:
            hook._files = ",".join([*([hook._files] if hook._files else []), *shipped])
        self.log.info("The job's secrets (%s) go to the driver in a file readable only by this user%s",
                      ", ".join(sorted(secrets)), ", shipped with --files" if ship else "")
        return env

    def _kubernetes_refs(self, hook: Any, secrets: dict[str, str]) -> None:
        missing = [name for name in secrets if not hook._conf.get(K8S_SECRET_REF + name)]
        if missing:
            confs = ", ".join(f"{K8S_SECRET_REF}{name}='<secret>:<key>'" for name in sorted(missing))
            raise DriverSecretsError(
                f"the job's secrets ({', '.join(sorted(missing))}: storage credentials or database URLs of the "
                f"delta connection) cannot reach a driver in Kubernetes cluster mode ({hook._connection['master']}) "
                "without a command line or a shared upload location. Either run in client mode "
                "(deploy_mode='client'; the driver takes them from the spark-submit process's environment), or "
                "store each in a Kubernetes secret of the namespace (the JSON the variable would hold; see the "
                f"operator docs) and name it in conf: {confs}. Nothing was submitted")
        for name in secrets:
            self.log.info("%s: the driver takes it from Kubernetes secret %s (conf %s%s), not from the delta "
                          "connection", name, hook._conf[K8S_SECRET_REF + name], K8S_SECRET_REF, name)

    def close(self) -> None:
        """Remove the files this submission wrote (the job has ended, or YARN has its copy)."""
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None


def remove_stale_secrets(max_age_hours: float = STALE_SECRETS_HOURS, now: float | None = None) -> list[str]:
    """Remove this user's secrets folders older than ``max_age_hours`` from the temporary directory
    (those of tasks killed with SIGKILL, whose :meth:`DriverSecrets.close` never ran); returns their paths.

    Fails safe: a folder stays while a process names it in its environment or command line (a driver
    that outlived its killed task, or one running longer than ``max_age_hours``, may still read its file:
    the application calls ``apply_hadoop_conf`` when it likes), and every folder stays when the processes
    cannot be checked (no ``/proc``, or a process of this user that cannot be read). Symbolic links and
    other users' folders are never touched; a failing sweep never fails the submission."""
    import time
    root = tempfile.gettempdir()
    cutoff = (time.time() if now is None else now) - max_age_hours * 3600
    try:
        names = os.listdir(root)
    except OSError:
        return []
    stale = []
    for name in names:
        path = os.path.join(root, name)
        if not name.startswith(SECRETS_DIR_PREFIX):
            continue
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and st.st_mtime < cutoff:
            stale.append(path)
    if not stale:
        return []
    in_use = _named_by_processes(stale)
    if in_use is None:
        return []
    removed = []
    for path in stale:
        if path in in_use:
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            removed.append(path)
    return removed


def _named_by_processes(folders: list[str]) -> set[str] | None:
    """The ``folders`` some live process may name in its environment or command line (``/proc``); None
    when that cannot be told at all (no ``/proc``).

    The environment (``NAME_FILE``) names the file in a client-mode driver and its Python process; the
    command line in spark-submit, which is the client-mode driver's JVM (the hook's YARN
    ``--conf spark.yarn.appMasterEnv.NAME_FILE=<path>``, cluster mode's ``--files <path>``), and it can
    always be read. A process of this user whose command line cannot be read counts as naming every
    folder created before it started (both are fixed when it starts): those stay. One that is gone names
    nothing."""
    proc = "/proc"
    try:
        pids = [p for p in os.listdir(proc) if p.isdigit()]
    except OSError:
        return None
    if not pids:
        return None
    created = {}
    for folder in folders:
        try:
            created[folder] = os.lstat(folder).st_mtime - 60     # the files are written right after mkdtemp
        except OSError:
            created[folder] = float("-inf")
    marks = {folder: os.fsencode(folder + os.sep) for folder in folders}
    named: set[str] = set()
    uid = os.getuid()
    for pid in pids:
        try:
            owner = os.stat(os.path.join(proc, pid)).st_uid
        except OSError:
            continue                                      # gone meanwhile
        blobs = []
        unreadable = False
        for part in ("environ", "cmdline"):
            try:
                with open(os.path.join(proc, pid, part), "rb") as f:
                    blobs.append(f.read())
            except (FileNotFoundError, ProcessLookupError):
                continue                                  # gone meanwhile
            except OSError:
                unreadable = unreadable or part == "cmdline"   # a driver's JVM names its file there too
        if unreadable and owner == uid:                   # one of ours we cannot read: keep what it may name
            started = _process_start(pid)
            named.update(f for f in folders if started is None or started >= created[f])
        data = b"\0".join(blobs)
        named.update(folder for folder, mark in marks.items() if mark in data)
    return named


def _process_start(pid: str) -> float | None:
    """When process ``pid`` started (epoch seconds, from ``/proc``), None when that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        with open("/proc/stat", "rb") as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith(b"btime "))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _pin_deploy_mode(hook: Any, env: dict[str, str]) -> str:
    """The deploy mode spark-submit will use, put on its command line (``--deploy-mode``) so that it is.

    spark-submit takes it from ``--deploy-mode`` (the hook's: the operator's argument, else the
    connection's ``deploy-mode`` extra), else ``spark.submit.deployMode`` (``conf``, then a properties
    file or ``spark-defaults.conf`` this worker cannot see), else ``DEPLOY_MODE``, else client. The
    route must know where the driver runs: what ``conf`` or ``env_vars`` say is taken, and without
    either, client mode is pinned (a cluster default of ``spark-defaults.conf`` would otherwise move
    the driver away from its secrets). The hook's derived flags are refreshed to match.
    """
    mode = (hook._connection.get("deploy_mode") or (hook._conf or {}).get("spark.submit.deployMode")
            or env.get("DEPLOY_MODE") or "client")
    hook._connection["deploy_mode"] = mode
    hook._is_yarn_cluster_mode = hook._is_yarn and mode == "cluster"
    hook._should_track_driver_status = hook._resolve_should_track_driver_status()
    return mode


def _mask(secrets: dict[str, str]) -> None:
    """Register with Airflow's secrets masker what the connection's own masking misses: database URLs
    (catalog, commit owner) are values under keys Airflow does not deem sensitive; their passwords and
    the URLs themselves are masked, wherever the driver's output (the task log) may echo them."""
    from urllib.parse import urlsplit

    from airflow.sdk.log import mask_secret

    def walk(value: Any) -> None:
        if isinstance(value, dict):
            for v in value.values():
                walk(v)
        elif isinstance(value, list):
            for v in value:
                walk(v)
        elif isinstance(value, str) and "://" in value:
            try:
                password = urlsplit(value).password
            except ValueError:
                password = None
            if password:
                mask_secret(password)
                mask_secret(value)

    for raw in secrets.values():
        mask_secret(raw)
        try:
            walk(json.loads(raw))
        except ValueError:
            continue
