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
(:meth:`DriverSecrets.close`). A worker killed before that (SIGKILL, a lost machine) leaves its folder:
each folder holds a marker naming its host, PID namespace, process id and that process's start time
(:data:`OWNER_MARKER`), and the next submission on the host removes the folders of this user whose
process is gone (:func:`sweep_orphaned_secrets`). A folder without a readable marker, of another host,
of another PID namespace or none recorded (a container sharing the host name and ``/tmp``: its process ids
mean nothing here; a marker of an earlier version), whose process runs (or cannot be checked), or that a live process may still name (in any spelling of its
path; :func:`_named_by_processes`) is kept. Kubernetes cluster mode is refused rather than given a file:
``--files`` would upload it to ``spark.kubernetes.file.upload.path``, a shared location nobody
cleans.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import string
import tempfile
import uuid
from typing import Any

import psutil

from ..hooks.arguments import DeltaArgumentError
from ..spark.delta_job import ENV_HADOOP_CONF, FILE_SUFFIX
from ..spark.job_args import SECRETS_ENV

#: the environment variables by which our operators hand a job secrets
SECRET_ENV_NAMES = (SECRETS_ENV, ENV_HADOOP_CONF)
#: the prefix of a submission's secrets folder in the temporary directory
SECRETS_DIR_PREFIX = "delta-spark-secrets-"
#: the file in a secrets folder naming the process that owns it: ``{"host", "pidns", "pid", "started"}``
OWNER_MARKER = "owner.json"
#: how far (seconds) a process's start time may differ from the recorded one and still be that process
_START_TOLERANCE_S = 1.0
#: ``conf`` prefix naming the Kubernetes secret (``<secret>:<key>``) a cluster-mode driver takes ``NAME`` from
K8S_SECRET_REF = "spark.kubernetes.driver.secretKeyRef."


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
            sweep_orphaned_secrets(self.log)
            self._dir = tempfile.mkdtemp(prefix=SECRETS_DIR_PREFIX)   # mode 0700
            _write_owner_marker(self._dir)
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


def _process_started(pid: int) -> float | None:
    """The start time (epoch seconds) of process ``pid``, None when there is no such process."""
    try:
        return psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return None


def _pid_namespace() -> int | None:
    """The inode of this process's PID namespace (``/proc/self/ns/pid``), when ``/proc`` is that namespace's:
    only then are the process ids psutil reads there the ones ``os.getpid()`` gives. None otherwise (no
    ``/proc``, not Linux, a ``/proc`` of another namespace): a folder's owner cannot be checked then."""
    try:
        if os.readlink("/proc/self") != str(os.getpid()):
            return None
        return os.stat("/proc/self/ns/pid").st_ino
    except (OSError, ValueError):
        return None


def _write_owner_marker(folder: str) -> None:
    """Name this process as the folder's owner (written whole, then renamed: a reader sees all or nothing).

    A process id means something only inside its PID namespace (a container sharing the host name and the
    temporary directory has its own), so the namespace is recorded with it; without one (and without a start
    time) no sweep ever removes the folder."""
    pidns = _pid_namespace()
    owner = {"host": socket.gethostname(), "pidns": pidns, "pid": os.getpid(),
             "started": _process_started(os.getpid()) if pidns is not None else None}
    partial = os.path.join(folder, f".{OWNER_MARKER}.{uuid.uuid4().hex}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(owner, f)
    os.replace(partial, os.path.join(folder, OWNER_MARKER))


def _orphaned(folder: str) -> bool:
    """Whether ``folder`` is a secrets folder of this user and host whose owning process is gone."""
    try:
        if os.stat(folder, follow_symlinks=False).st_uid != os.getuid() or os.path.islink(folder):
            return False
        with open(os.path.join(folder, OWNER_MARKER), encoding="utf-8") as f:
            owner = json.load(f)
        pid, started = int(owner["pid"]), float(owner["started"])
        if owner["host"] != socket.gethostname():
            return False                # another machine's (a shared /tmp): its processes are not visible here
        here = _pid_namespace()
        if owner.get("pidns") is None or here is None or int(owner["pidns"]) != here:
            return False                # another PID namespace's pid (a container), none recorded (a marker of an
            #                             earlier version: its namespace is unknown), or no /proc of ours: keep
        running = _process_started(pid)
    except (OSError, ValueError, TypeError, KeyError, psutil.Error):
        return False                    # no readable marker (being created, not ours) or cannot be checked: keep
    return running is None or abs(running - started) > _START_TOLERANCE_S   # gone, or the pid is another's now


def sweep_orphaned_secrets(log: Any = None, directory: str | None = None) -> list[str]:
    """Remove the secrets folders in ``directory`` (the temporary directory) left by processes of this user
    on this host that are gone (killed before :meth:`DriverSecrets.close`); returns the folders removed."""
    directory = directory or tempfile.gettempdir()
    try:
        names = [n for n in os.listdir(directory) if n.startswith(SECRETS_DIR_PREFIX)]
    except OSError:
        return []
    orphans = [os.path.join(directory, n) for n in names if _orphaned(os.path.join(directory, n))]
    in_use = _named_by_processes(orphans) if orphans else set()
    if in_use is None:
        return []                       # the processes cannot be listed: keep everything
    removed = []
    for folder in orphans:
        if folder in in_use:
            continue
        shutil.rmtree(folder, ignore_errors=True)
        if not os.path.lexists(folder):
            removed.append(folder)
            if log is not None:
                log.info("removed %s: secrets folder of a process that is gone (killed before it removed it)",
                         folder)
    return removed


def _named_by_processes(folders: list[str]) -> set[str] | None:
    """The ``folders`` a live process may still use: one that names it in its environment (a client-mode
    driver's ``NAME_FILE``) or command line (spark-submit's ``--files`` or YARN ``appMasterEnv``), which may
    have outlived the SIGKILLed task that made the folder (children are not killed with it) and reads the
    file when the application asks. None when the processes cannot be listed at all.

    A process names a folder when it spells a path to it: the folder's name in a path that resolves to the
    same folder (device and inode), such as one through a symbolic link (the task that made it had
    ``TMPDIR=/tmp/link``, a link to the sweeper's ``/tmp``), or an absolute path that leads to or into the
    folder, all links followed (a link to the folder itself under another name; :func:`_reached`). Doubt
    keeps the folder: any occurrence of its name not inside a longer file name (:data:`_NAME_CHARS`) whose
    spellings all resolve to nothing (a removed link, a directory this process cannot search, a relative
    path in an unreadable working directory, a JSON ``\\/`` escape) names it; a process of this user whose
    command line or environment cannot be read names every folder made before it started, and so does a
    zombie to psutil whose threads still run (its main thread exited; :func:`_threads_run`).

    Not seen (the limit of what is cheap to prove): a link to the folder under another name spelled by a
    relative path, or only in an escaped form (``\\/``); a process holding the folder only as an open file
    descriptor or its working directory. (Found by the s10 and s11 reviews: such folders were removed under a
    running driver; under one that spelled its temporary directory through a link, or whose environment was
    unreadable; then under a zombie-main-thread process, escaped or newline-followed names, and a link to the
    folder itself.)"""
    try:
        processes = list(psutil.process_iter())
    except psutil.Error:
        return None
    if not processes:
        return None
    identity: dict[str, tuple[int, int]] = {}
    made: dict[str, float] = {}
    for folder in folders:
        try:
            st = os.lstat(folder)
        except OSError:
            continue                                              # gone meanwhile (another sweep)
        identity[folder] = (st.st_dev, st.st_ino)
        made[folder] = st.st_mtime - 60                           # the files are written right after mkdtemp
    named = set(folders) - set(identity)                          # what cannot be looked at is kept
    real = {f: os.path.realpath(f) for f in identity}
    resolved: dict[str, str] = {}                                 # path -> its real path, for all processes
    uid = os.getuid()
    for process in processes:
        try:
            try:
                tokens, unread = _process_texts(process)
            except psutil.ZombieProcess:
                if not _threads_run(process.pid):                 # a zombie indeed: gone, names nothing
                    continue
                tokens, unread = [], True                         # its leader exited, its threads run: doubt
            if unread and process.uids().real == uid:             # ours, unreadable: keep what it may name
                started = process.create_time()
                named.update(f for f in identity if started >= made[f])
            named.update(f for f, ident in identity.items() if _names(process, tokens, f, ident))
            named.update(_reached(tokens, real, resolved))
        except psutil.ZombieProcess:                              # became one meanwhile
            if _threads_run(process.pid):
                named.update(folders)
        except psutil.NoSuchProcess:                              # gone meanwhile: names nothing
            continue
        except psutil.Error:                                      # cannot tell whose it is: keep everything
            named.update(folders)
    return named


def _threads_run(pid: int) -> bool:
    """Whether process ``pid``, a zombie to psutil, still has running threads (its main thread exited, the
    others go on: Linux lists them in ``/proc/<pid>/task``); True when that cannot be told."""
    try:
        return len(os.listdir(f"/proc/{pid}/task")) > 1
    except FileNotFoundError:
        return not os.path.isdir("/proc")                         # no /proc (not Linux): cannot tell
    except OSError:
        return True


#: an absolute path as a command line or environment spells one (up to a character no path of ours holds)
_ABSOLUTE_PATH = re.compile(r"/[^\s=,:;\"'\\()\[\]{}<>?#&|]*")


def _reached(tokens: list[str], real: dict[str, str], resolved: dict[str, str]) -> list[str]:
    """The folders of ``real`` (folder -> its real path) that an absolute path in ``tokens`` leads to or into,
    all links followed: a link to the folder itself, under another name (``resolved`` caches real paths)."""
    out = []
    for token in tokens:
        for path in _ABSOLUTE_PATH.findall(token):
            if path not in resolved:
                try:
                    resolved[path] = os.path.realpath(path)
                except (OSError, ValueError):
                    resolved[path] = ""
            target = resolved[path]
            out.extend(f for f, r in real.items() if target == r or target.startswith(r + os.sep))
    return out


#: characters of a file name next to the folder's: with one before or after it, an occurrence of the
#: folder's name is part of another name (``delta-spark-secrets-ab12cd34.bak``). Any other character
#: (a delimiter, a quote, a JSON ``\/`` escape, a newline, a bracket, ``?#&|``) may end a path to it.
_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "_-.")
#: characters a path to the folder is spelled with: a path starts after any other (or at the token's start)
_PATH_CHARS = _NAME_CHARS | {os.sep, "~", "+", "@", "%"}


def _process_texts(process: Any) -> tuple[list[str], bool]:
    """The command-line arguments and ``NAME=value`` environment entries of ``process``, and whether any
    of the two could not be read."""
    tokens: list[str] = []
    unread = False
    for read in (process.cmdline, lambda: [f"{k}={v}" for k, v in process.environ().items()]):
        try:
            tokens.extend(read())
        except psutil.AccessDenied:
            unread = True
    return tokens, unread


def _names(process: Any, tokens: list[str], folder: str, identity: tuple[int, int]) -> bool:
    """Whether ``tokens`` (of ``process``) spell a path naming ``folder`` (``identity``: its device and inode),
    or one ending in its name that cannot be resolved (doubt)."""
    name = os.path.basename(folder)
    for token in tokens:
        at = token.find(name)
        while at >= 0:
            end = at + len(name)
            before, after = token[at - 1:at], token[end:end + 1]
            if before not in _NAME_CHARS and after not in _NAME_CHARS:   # not part of a longer name
                if before == os.sep:                              # a path to it: starts after a delimiter
                    spelled = [token[s:end] for s in range(at) if s == 0 or token[s - 1] not in _PATH_CHARS]
                else:
                    spelled = [name]
                found = [_identity_of(process, path) for path in spelled]
                if identity in found or all(f is None for f in found):
                    return True                                   # the folder, or cannot tell: keep
            at = token.find(name, at + 1)
    return False


def _identity_of(process: Any, path: str) -> tuple[int, int] | None:
    """Device and inode of what ``path`` (as ``process`` spells it; relative to its working directory) leads
    to, all links followed; None when it cannot be resolved."""
    try:
        if not os.path.isabs(path):
            path = os.path.join(process.cwd(), path)
        st = os.stat(path)
    except (psutil.AccessDenied, OSError, ValueError):        # (NoSuchProcess goes up: gone, names nothing)
        return None
    return st.st_dev, st.st_ino


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
