"""What a Delta Spark job gets from ``DeltaSparkApplicationOperator``: the pinned input, the txn pair.

The operator runs *your* PySpark application, which reads and writes with
``format("delta")`` (Delta Spark commits). It hands the application:

* the input table and the version pinned for it (read it with ``versionAsOf``), or,
  for an incremental job, the range of versions whose changes it has to process
  (read them with ``readChangeFeed`` from ``startingVersion`` to ``endingVersion``), and
* the output table and the exactly-once pair for Delta Spark's idempotent writes
  (``txnAppId`` / ``txnVersion``, set for the session by the operator), so a retried or
  re-run task never appends twice,

both as one application argument ``--delta-job-context=<JSON>`` and as environment
variables (``DELTA_JOB_*``, below). In the application::

    from airflow_provider_delta.spark.delta_job import apply_hadoop_conf, delta_job_context

    ctx = delta_job_context()          # reads sys.argv, else the DELTA_JOB_* variables
    apply_hadoop_conf(spark)           # S3 tables: the connection's per-bucket S3A settings, if any
    df = spark.read.format("delta").options(**ctx.read_options).load(ctx.input_table_uri)
    # read_options: {"versionAsOf": ...}, or for an incremental job (input.starting_version set)
    # {"readChangeFeed": "true", "startingVersion": ..., "endingVersion": ...}
    df.write.format("delta").mode("append").save(ctx.output_table_uri)     # once: the one Delta write
    # ctx.args: the application's other arguments (application_args), for argparse

What the application must do: write the output with Delta Spark once, and make no other
Delta write (or DML) in the session. The operator sets the exactly-once pair for the
application's session (:attr:`DeltaJobContext.session_conf`), so that one write is idempotent
without any option; a second Delta write fails instead of appending twice on a retry or being
skipped. Do not pass ``txnAppId``/``txnVersion`` yourself: Delta Spark silently skips a write
whose pair is already recorded. Delta Spark uses the pair up when it prepares a write, even one
that then loses a race (another run created the table first), so an application that writes
again after such an error calls ``ctx.arm_session(spark)`` first.

How the pair reaches the session: ``spark-submit`` runs this module (:func:`run_application`),
which runs the application and sets the pair on the first session the application gets from
``SparkSession.builder.getOrCreate()``, in that session's SQL conf only. ``SparkConf`` (what
every new session, ``spark.newSession()`` or one a library makes, starts from) holds
``txnAppId`` without ``txnVersion`` (:attr:`DeltaJobContext.submit_conf`): a Delta write in
any other session fails with Delta's "Both ... txnAppId and ... txnVersion must be specified"
instead of being skipped or appending outside the pair.

The JSON document (``format_version`` 1; ``input`` is null for a job without input;
``input.starting_version`` only for an incremental job, whose range is
``starting_version``..``version``)::

    {"format": "delta-job-context", "format_version": 1,
     "input": {"table_uri": "file:///data/orders", "version": 12, "starting_version": 10},
     "output": {"table_uri": "file:///data/customers"},
     "txn": {"app_id": "dag:task", "version": 1767225600},
     "job": {"dag_id": ..., "task_id": ..., "run_id": ..., "try_number": ...}}

Table URIs are in the form Spark reads (``file:///...``, ``s3a://...``). For tables on S3
the operator also passes the delta connection's credentials and endpoint as per-bucket S3A
settings, in the environment only (``DELTA_JOB_HADOOP_CONF``, never on the command line);
the application applies them before it reads or writes::

    apply_hadoop_conf(spark)           # fs.s3a.bucket.<bucket>.* on the session's Hadoop conf

This module
uses only the standard library and imports nothing else of this package, so a
cluster without the package installed can ship this one file (``py_files``) and
``from delta_job import delta_job_context``.
"""
from __future__ import annotations

import json
import os
import runpy
import sys
import traceback
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

#: the application argument: ``--delta-job-context=<JSON>`` (or the flag, then the JSON)
CONTEXT_ARG = "--delta-job-context"
#: the argument of :func:`run_application` (this module run by spark-submit) naming the user's application
APPLICATION_ARG = "--delta-job-application"
FORMAT = "delta-job-context"
FORMAT_VERSION = 1

ENV_INPUT_TABLE_URI = "DELTA_JOB_INPUT_TABLE_URI"
ENV_INPUT_VERSION = "DELTA_JOB_INPUT_VERSION"
ENV_INPUT_STARTING_VERSION = "DELTA_JOB_INPUT_STARTING_VERSION"
ENV_OUTPUT_TABLE_URI = "DELTA_JOB_OUTPUT_TABLE_URI"
ENV_TXN_APP_ID = "DELTA_JOB_TXN_APP_ID"
ENV_TXN_VERSION = "DELTA_JOB_TXN_VERSION"
#: JSON object of Hadoop settings (per-bucket S3A credentials): secret, so environment only
ENV_HADOOP_CONF = "DELTA_JOB_HADOOP_CONF"
ENV_VARS = (ENV_INPUT_TABLE_URI, ENV_INPUT_VERSION, ENV_INPUT_STARTING_VERSION, ENV_OUTPUT_TABLE_URI, ENV_TXN_APP_ID,
            ENV_TXN_VERSION)

#: Delta Spark's session settings for idempotent writes (used when a write passes no options)
TXN_APP_ID_CONF = "spark.databricks.delta.write.txnAppId"
TXN_VERSION_CONF = "spark.databricks.delta.write.txnVersion"
TXN_AUTO_RESET_CONF = "spark.databricks.delta.write.txnVersion.autoReset.enabled"
#: Delta Spark's session setting for ``commitInfo.userMetadata``
USER_METADATA_CONF = "spark.databricks.delta.commitInfo.userMetadata"
#: the key of the run marker in ``commitInfo.userMetadata``
RUN_MARKER_KEY = "airflow_run"

_HOW = (f"this application expects to be run by DeltaSparkApplicationOperator, which passes "
        f"{CONTEXT_ARG}=<JSON> and the {', '.join(ENV_VARS)} environment variables")


class DeltaJobContextError(ValueError):
    """The job's Delta context is missing or malformed; the message says what and where."""


def _version(value: Any, what: str) -> int:
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise DeltaJobContextError(f"{what} must be a non-negative integer, got {value!r}")
    return value


def _uri(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise DeltaJobContextError(f"{what} must be a non-empty string, got {value!r}")
    return value.strip()


@dataclass(frozen=True)
class DeltaJobContext:
    """The pinned input (may be None: a job without input), the output and the exactly-once pair.

    ``input_starting_version`` makes the job incremental: its input is the change feed of
    versions ``input_starting_version``..``input_version`` (both included).
    """

    input_table_uri: str | None
    input_version: int | None
    output_table_uri: str
    txn_app_id: str
    txn_version: int
    job: dict[str, Any] = field(default_factory=dict, compare=False)
    #: the application's arguments other than the context argument
    args: tuple[str, ...] = ()
    #: first version of an incremental job's change range (None: read the snapshot at input_version)
    input_starting_version: int | None = None

    def __post_init__(self) -> None:
        _uri(self.output_table_uri, "output.table_uri")
        _uri(self.txn_app_id, "txn.app_id")
        object.__setattr__(self, "txn_version", _version(self.txn_version, "txn.version"))
        if self.input_table_uri is None:
            if self.input_version is not None:
                raise DeltaJobContextError("input.version is given without input.table_uri")
        else:
            _uri(self.input_table_uri, "input.table_uri")
            if self.input_version is None:
                raise DeltaJobContextError("input.table_uri needs input.version (the version pinned for the job)")
            object.__setattr__(self, "input_version", _version(self.input_version, "input.version"))
        if self.input_starting_version is not None:
            if self.input_table_uri is None:
                raise DeltaJobContextError("input.starting_version is given without input.table_uri")
            start = _version(self.input_starting_version, "input.starting_version")
            if start > self.input_version:  # type: ignore[operator]
                raise DeltaJobContextError(f"input.starting_version {start} is after input.version "
                                           f"{self.input_version}: there is no change to read")
            object.__setattr__(self, "input_starting_version", start)

    @property
    def incremental(self) -> bool:
        """Whether the input is a range of changes (read with ``readChangeFeed``), not a snapshot."""
        return self.input_starting_version is not None

    @property
    def write_options(self) -> dict[str, str]:
        """Nothing any more: the pair is set for the whole session (:attr:`session_conf`).

        Kept so that applications written as ``.options(**ctx.write_options)`` keep working.
        Passing ``txnAppId``/``txnVersion`` as write options would defeat the one-write check:
        Delta Spark silently skips a second write that carries a recorded pair.
        """
        return {}

    @property
    def run_marker(self) -> str:
        """``commitInfo.userMetadata`` of the output commit: which Airflow run made it, from which input.

        A retry that finds the pair already committed reads it back to tell this run's commit
        (announce it: the try that made it died before it could) from another run's.
        """
        doc = {"dag_id": self.job.get("dag_id"), "task_id": self.job.get("task_id"),
               "run_id": self.job.get("run_id"), "try_number": self.job.get("try_number"),
               "input_table_uri": self.input_table_uri, "input_version": self.input_version}
        if "map_index" in self.job:                 # a mapped instance: tells it from its siblings
            doc["map_index"] = self.job["map_index"]
        if self.incremental:
            doc["input_starting_version"] = self.input_starting_version
        return json.dumps({RUN_MARKER_KEY: doc}, separators=(",", ":"), sort_keys=True, default=str)

    @property
    def session_conf(self) -> dict[str, str]:
        """The settings of the application's session, so that the output is written exactly once
        without the application's help.

        Delta Spark reads the idempotent-write pair from the session when a write has no
        ``txnAppId``/``txnVersion`` options, for every Delta write and DML command. With
        ``autoReset`` the first write uses the version up (committed, or skipped because a
        previous try committed it); a second Delta write in the same application then fails
        (the app id is left without a version) instead of appending outside the pair or being
        skipped. ``userMetadata`` marks the commit with :attr:`run_marker`.
        """
        return {**self.submit_conf, TXN_VERSION_CONF: str(self.txn_version)}

    @property
    def submit_conf(self) -> dict[str, str]:
        """What the operator passes as ``spark-submit --conf`` (``SparkConf``): :attr:`session_conf`
        without ``txnVersion``.

        Every session starts from ``SparkConf``: the application's own (armed by
        :func:`run_application` with the version) and any new one (``spark.newSession()``, or a
        library's). With the app id and no version, Delta Spark refuses a write in a new
        session ("Both ... must be specified") where a version would have let it skip the write
        silently (the pair is recorded by then) or commit outside this try's one write.
        """
        return {TXN_APP_ID_CONF: self.txn_app_id, TXN_AUTO_RESET_CONF: "true", USER_METADATA_CONF: self.run_marker}

    def arm_session(self, spark: Any) -> None:
        """Set this run's exactly-once pair on ``spark``'s session, for the next Delta write in it.

        Delta Spark consumes the session's ``txnVersion`` when it prepares a write (``autoReset``
        unsets it before the commit is attempted), so a write that then loses a race (a
        concurrent create of the table, or the same pair committed by another run) leaves the
        session without it, and writing again fails with Delta's "Both txnAppId and txnVersion
        must be specified". An application that retries such a write calls this first: the
        retry then carries the same pair, so it appends once or, if the pair is in the table
        by now, is skipped. It changes only this session's SQL conf (not ``SparkConf``, which
        new sessions copy). :func:`run_application` calls it for the application's first session.
        """
        for key, value in self.session_conf.items():
            if key != USER_METADATA_CONF:      # the run marker stays whatever the operator (or the job) set
                spark.conf.set(key, value)

    @property
    def read_options(self) -> dict[str, str]:
        """``{"versionAsOf": "<pinned version>"}`` (empty without input); for an incremental job the
        change-feed options ``readChangeFeed``, ``startingVersion`` and ``endingVersion``."""
        if self.input_version is None:
            return {}
        if self.incremental:
            return {"readChangeFeed": "true", "startingVersion": str(self.input_starting_version),
                    "endingVersion": str(self.input_version)}
        return {"versionAsOf": str(self.input_version)}

    # ------------------------------------------------------------- encoding
    def to_document(self) -> dict[str, Any]:
        return {"format": FORMAT, "format_version": FORMAT_VERSION,
                "input": None if self.input_table_uri is None else
                {"table_uri": self.input_table_uri, "version": self.input_version,
                 **({"starting_version": self.input_starting_version} if self.incremental else {})},
                "output": {"table_uri": self.output_table_uri},
                "txn": {"app_id": self.txn_app_id, "version": self.txn_version},
                "job": dict(self.job)}

    def to_argument(self) -> str:
        """The one application argument: ``--delta-job-context=<JSON>``."""
        return f"{CONTEXT_ARG}={json.dumps(self.to_document(), separators=(',', ':'), default=str)}"

    def to_env(self) -> dict[str, str]:
        """The same values as environment variables (the input ones only when there is an input)."""
        env = {ENV_OUTPUT_TABLE_URI: self.output_table_uri, ENV_TXN_APP_ID: self.txn_app_id,
               ENV_TXN_VERSION: str(self.txn_version)}
        if self.input_table_uri is not None:
            env[ENV_INPUT_TABLE_URI] = self.input_table_uri
            env[ENV_INPUT_VERSION] = str(self.input_version)
        if self.incremental:
            env[ENV_INPUT_STARTING_VERSION] = str(self.input_starting_version)
        return env

    # ------------------------------------------------------------- decoding
    @classmethod
    def from_document(cls, doc: Any, args: Sequence[str] = ()) -> "DeltaJobContext":
        if not isinstance(doc, dict):
            raise DeltaJobContextError(f"the {CONTEXT_ARG} argument must be a JSON object")
        if doc.get("format", FORMAT) != FORMAT:
            raise DeltaJobContextError(f"the {CONTEXT_ARG} argument is a {doc.get('format')!r} document, "
                                       f"not {FORMAT!r}")
        if doc.get("format_version", FORMAT_VERSION) != FORMAT_VERSION:
            raise DeltaJobContextError(f"unsupported {FORMAT} format_version {doc.get('format_version')!r} "
                                       f"(this helper reads version {FORMAT_VERSION}): upgrade "
                                       "airflow-provider-delta where the job runs")
        inp, out, txn = doc.get("input"), doc.get("output"), doc.get("txn")
        if inp is not None and not isinstance(inp, dict):
            raise DeltaJobContextError("'input' must be null or an object with 'table_uri' and 'version'")
        if not isinstance(out, dict):
            raise DeltaJobContextError("the job context needs an 'output' object with 'table_uri'")
        if not isinstance(txn, dict):
            raise DeltaJobContextError("the job context needs a 'txn' object with 'app_id' and 'version'")
        job = doc.get("job") or {}
        if not isinstance(job, dict):
            raise DeltaJobContextError("'job' must be an object")
        inp = inp or {}
        return cls(input_table_uri=inp.get("table_uri"), input_version=inp.get("version"),
                   output_table_uri=out.get("table_uri"), txn_app_id=txn.get("app_id"),
                   txn_version=txn.get("version"), job=job, args=tuple(args),
                   input_starting_version=inp.get("starting_version"))

    @classmethod
    def parse(cls, text: str, args: Sequence[str] = ()) -> "DeltaJobContext":
        try:
            doc = json.loads(text)
        except ValueError as e:
            raise DeltaJobContextError(f"the {CONTEXT_ARG} argument is not valid JSON: {e}") from None
        return cls.from_document(doc, args)

    @classmethod
    def from_env(cls, environ: Mapping[str, str], args: Sequence[str] = ()) -> "DeltaJobContext":
        missing = [k for k in (ENV_OUTPUT_TABLE_URI, ENV_TXN_APP_ID, ENV_TXN_VERSION) if not environ.get(k)]
        if missing:
            raise DeltaJobContextError(f"environment variable(s) {', '.join(missing)} not set: {_HOW}")
        try:
            return cls(input_table_uri=environ.get(ENV_INPUT_TABLE_URI) or None,
                       input_version=environ.get(ENV_INPUT_VERSION) or None,
                       output_table_uri=environ[ENV_OUTPUT_TABLE_URI], txn_app_id=environ[ENV_TXN_APP_ID],
                       txn_version=environ[ENV_TXN_VERSION], args=tuple(args),  # type: ignore[arg-type]
                       input_starting_version=environ.get(ENV_INPUT_STARTING_VERSION) or None)
        except DeltaJobContextError as e:
            raise DeltaJobContextError(f"in the DELTA_JOB_* environment variables: {e}") from None


def parse_run_marker(user_metadata: Any) -> dict[str, Any] | None:
    """The run marker (:attr:`DeltaJobContext.run_marker`) in a commit's ``userMetadata``, else None."""
    if not isinstance(user_metadata, str) or RUN_MARKER_KEY not in user_metadata:
        return None
    try:
        doc = json.loads(user_metadata)
    except ValueError:
        return None
    marker = doc.get(RUN_MARKER_KEY) if isinstance(doc, dict) else None
    return marker if isinstance(marker, dict) else None


def split_argv(argv: Sequence[str]) -> tuple[str | None, list[str]]:
    """(the context JSON, the other arguments); refuses a context given twice or a flag without value."""
    found: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg.startswith(CONTEXT_ARG + "="):
            found.append(arg[len(CONTEXT_ARG) + 1:])
        elif arg == CONTEXT_ARG:
            if i + 1 >= len(argv):
                raise DeltaJobContextError(f"{CONTEXT_ARG} is the last argument: its JSON value is missing")
            found.append(argv[i + 1])
            i += 1
        else:
            rest.append(arg)
        i += 1
    if len(found) > 1:
        raise DeltaJobContextError(f"{CONTEXT_ARG} is given {len(found)} times; give it once")
    return (found[0] if found else None), rest


def delta_job_context(argv: Sequence[str] | None = None,
                      environ: Mapping[str, str] | None = None) -> DeltaJobContext:
    """The job's context: from ``--delta-job-context=<JSON>`` in ``argv`` (default ``sys.argv[1:]``),
    else from the ``DELTA_JOB_*`` environment variables; :class:`DeltaJobContextError` if neither."""
    argv = list(sys.argv[1:] if argv is None else argv)
    environ = os.environ if environ is None else environ
    text, rest = split_argv(argv)
    if text is not None:
        return DeltaJobContext.parse(text, rest)
    if any(environ.get(k) for k in ENV_VARS):
        return DeltaJobContext.from_env(environ, rest)
    raise DeltaJobContextError(f"no Delta job context in the arguments or the environment: {_HOW}")


def set_hadoop_conf(spark: Any, conf: Mapping[str, str]) -> list[str]:
    """Set ``conf`` on the session's Hadoop configuration (what Spark's file systems read); returns the keys.

    Must run before Spark first opens a path these settings are for: Hadoop caches a file
    system per bucket with the settings it was created with. Values are never printed.
    """
    if conf:
        hadoop = spark.sparkContext._jsc.hadoopConfiguration()
        for key, value in conf.items():
            hadoop.set(str(key), str(value))
    return sorted(conf)


#: ``<NAME>`` + this: the variable naming a file that holds what ``<NAME>`` would (see :func:`env_json_object`)
FILE_SUFFIX = "_FILE"


def env_json_object(name: str, environ: Mapping[str, str] | None = None,
                    error: type[Exception] = DeltaJobContextError) -> dict[str, Any]:
    """The JSON object in environment variable ``name`` ({} when unset); ``error`` when it is not one.

    How jobs receive what must stay off their command line (secrets, credentials). Where the
    environment cannot carry it safely (YARN puts a driver's environment on the spark-submit
    command line), ``<name>_FILE`` names a file holding the same JSON instead: an absolute path
    (the driver runs on the submitting worker) or a name in the driver's working directory
    (YARN cluster mode, where ``--files`` puts it); see ``operators/spark_secrets.py``.
    """
    environ = os.environ if environ is None else environ
    raw = environ.get(name)
    if not raw and environ.get(name + FILE_SUFFIX):
        path = environ[name + FILE_SUFFIX]
        try:
            with open(path, encoding="utf-8") as f:
                raw = f.read()
        except OSError as e:
            raise error(f"{name}{FILE_SUFFIX} names {path!r}, which cannot be read "
                        f"(working directory {os.getcwd()!r}): {e.strerror}") from None
    if not raw:
        return {}
    try:
        doc = json.loads(raw)
    except ValueError:
        raise error(f"{name} is not valid JSON") from None
    if not isinstance(doc, dict):
        raise error(f"{name} must hold a JSON object")
    return doc


def apply_hadoop_conf(spark: Any, environ: Mapping[str, str] | None = None) -> list[str]:
    """Apply the Hadoop settings the operator passed in ``DELTA_JOB_HADOOP_CONF`` (if any); returns the keys."""
    return set_hadoop_conf(spark, env_json_object(ENV_HADOOP_CONF, environ))


def application_path(name: str) -> str:
    """The user's application file: ``name`` where it is, else its file name in the working directory
    (cluster deploy modes, where spark-submit shipped it with ``--files``)."""
    for path in (name, os.path.basename(name)):
        if path and os.path.isfile(path):
            return path
    raise DeltaJobContextError(f"the application {name!r} is not a file here (working directory "
                               f"{os.getcwd()}): give DeltaSparkApplicationOperator a local path, or one "
                               "spark-submit ships with --files")


def arm_first_session(ctx: DeltaJobContext) -> list[Any]:
    """Arm (:meth:`DeltaJobContext.arm_session`) the first session ``SparkSession.builder.getOrCreate()``
    returns in this process, once: later calls return the same session (by then its write may have
    used the pair up) or, after ``stop()``, a new one that gets only ``SparkConf``'s app id.

    Returns the list that will hold that session once armed (empty until then)."""
    from pyspark.sql import SparkSession        # only where the application runs (spark-submit's driver)

    original = SparkSession.Builder.getOrCreate
    armed: list[Any] = []

    def get_or_create(builder: Any) -> Any:
        session = original(builder)
        if not armed:
            armed.append(session)
            ctx.arm_session(session)
        return session
    SparkSession.Builder.getOrCreate = get_or_create  # type: ignore[method-assign]
    return armed


#: the exit code of :func:`run_application` when the application failed on a Delta write that Delta
#: refused for lack of ``txnVersion`` after the armed session had used the pair up: a second Delta
#: write, which did not happen (``DeltaSparkApplicationOperator`` fails without retry)
EXIT_SECOND_WRITE_REFUSED = 87
#: Delta Spark's error class for a write with ``txnAppId`` and no ``txnVersion`` (or the other way round)
REFUSED_WRITE_ERROR = "DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS"


def _pair_used_up(armed: Sequence[Any]) -> bool:
    """Whether the armed session's ``txnVersion`` is gone: a Delta write in it prepared with the pair."""
    if not armed:
        return False
    try:
        return armed[0].conf.get(TXN_VERSION_CONF, None) is None
    except Exception:       # the JVM is gone: nothing to tell
        return False


def _refused_write(error: BaseException) -> bool:
    """Whether ``error`` (or an error it was raised from or while handling) is Delta's refusal of a
    write without ``txnVersion``."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        if REFUSED_WRITE_ERROR in str(e):
            return True
        e = e.__cause__ or e.__context__
    return False


@contextmanager
def watching_refused_writes(armed: Sequence[Any]) -> Iterator[list[BaseException]]:
    """Record each refusal of a Delta write (:data:`REFUSED_WRITE_ERROR`) that reaches Python after the
    armed session used the pair up, also one the application catches and goes on from (its rows are lost
    all the same). Yields the list they are recorded in.

    PySpark turns every JVM error of a call into a Python one through
    ``pyspark.errors.exceptions.captured.convert_exception``; the wrapper looks at each on its way."""
    from pyspark.errors.exceptions import captured     # only where the application runs

    original = captured.convert_exception
    refused: list[BaseException] = []

    def convert(e: Any) -> Any:
        converted = original(e)
        try:
            if REFUSED_WRITE_ERROR in str(converted) and _pair_used_up(armed):
                refused.append(converted)
        except Exception:                    # never in the way of the application's own error
            pass
        return converted
    captured.convert_exception = convert  # type: ignore[assignment]
    try:
        yield refused
    finally:
        captured.convert_exception = original  # type: ignore[assignment]


def run_application(argv: Sequence[str] | None = None) -> None:
    """What spark-submit runs for ``DeltaSparkApplicationOperator``: ``delta_job.py
    --delta-job-application=<app.py> [app args] --delta-job-context=<JSON>``.

    Runs ``app.py`` as ``__main__`` (``sys.argv`` and ``sys.path[0]`` as ``python app.py`` would set
    them, without the application argument) after :func:`arm_first_session`: the exactly-once pair
    goes into the application's session only, never into ``SparkConf`` (see the module doc).

    When Delta refused a write after the armed session used the pair up (a second Delta write), exits
    with :data:`EXIT_SECOND_WRITE_REFUSED`, also when the application caught the error and finished
    (:func:`watching_refused_writes`), which the operator turns
    into a failure without retry; any other failure or exit is the application's own (an exit with
    code 87 of the application's own becomes 1: only the entry says 87).
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    apps = [a[len(APPLICATION_ARG) + 1:] for a in argv if a.startswith(APPLICATION_ARG + "=")]
    if len(apps) != 1:
        raise DeltaJobContextError(f"run_application needs {APPLICATION_ARG}=<application> once, got {apps}")
    rest = [a for a in argv if not a.startswith(APPLICATION_ARG + "=")]
    ctx = delta_job_context(rest)
    path = application_path(apps[0])
    armed = arm_first_session(ctx)
    sys.argv = [path, *rest]
    sys.path[0] = os.path.dirname(os.path.abspath(path))    # not this module's folder: its names would shadow
    refused: list[BaseException] = []
    try:
        with watching_refused_writes(armed) as refused:
            runpy.run_path(path, run_name="__main__")
    except BaseException as e:
        if not refused and not (_refused_write(e) and _pair_used_up(armed)):
            if isinstance(e, SystemExit) and e.code == EXIT_SECOND_WRITE_REFUSED:
                # the application's own exit 87 is not the entry's verdict (the operator would fail the
                # task without retry and name a refused write that never happened): exit 1 instead
                print(f"delta_job: the application exited with {EXIT_SECOND_WRITE_REFUSED}, the code this entry "
                      "keeps for a refused second Delta write; exiting with 1", file=sys.stderr, flush=True)
                raise SystemExit(1) from None
            raise
        if not (isinstance(e, SystemExit) and e.code in (None, 0)):
            traceback.print_exc()
        _exit_refused(ctx, caught=not _refused_write(e))
    if refused:                             # the application caught the refusal and finished
        _exit_refused(ctx, caught=True)


def _exit_refused(ctx: DeltaJobContext, caught: bool) -> None:
    print(f"delta_job: the application made a Delta write after the one that used the exactly-once pair "
          f"(txnAppId={ctx.txn_app_id!r} txnVersion={ctx.txn_version}) and Delta refused it "
          f"({REFUSED_WRITE_ERROR}{'; the application caught the error and went on' if caught else ''}): "
          f"that write did not happen. Exiting with {EXIT_SECOND_WRITE_REFUSED}: the task fails without retry "
          "(a retry would find the pair committed and announce the output without its rows)",
          file=sys.stderr, flush=True)
    raise SystemExit(EXIT_SECOND_WRITE_REFUSED) from None

if __name__ == "__main__":
    run_application()
