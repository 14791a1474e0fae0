"""A stand-in ``spark-submit`` for the driver-secrets tests (tests/spark/test_spark_driver_secrets.py,
tests/airflow/test_break_s9_secrets.py): YARN, Kubernetes and standalone clusters are not on this machine.

It resolves the deploy mode the way Spark's ``SparkSubmitArguments`` does: ``--deploy-mode``, else the
property ``spark.submit.deployMode`` from ``--conf`` or ``$SPARK_CONF_DIR/spark-defaults.conf``, else the
``DEPLOY_MODE`` environment variable, else client (checked against the real pyspark spark-submit, which
answers ``--master local --conf spark.submit.deployMode=cluster`` with "Cluster deploy mode is not
compatible with master local"). It records its arguments, the deploy mode, the ``DELTA_*`` environment
and the modes of the ``--files`` and of a secrets file named by absolute path, then plays the driver
where that mode puts it: a YARN container (copies of its ``--files`` as working directory, only the
``spark.yarn.appMasterEnv.*`` variables; the worker's /tmp is another machine's), a Kubernetes pod
(``spark.kubernetes.driverEnv.*``), a standalone worker (the legacy standalone client sends spark-submit's
whole environment with the driver description: ``sent_to_master``), or this worker (client mode). The
secrets the driver reads are ``driver_secrets`` (``driver_error`` when it cannot read them). It commits
nothing: an operator submitting to it fails after the submit.
"""
from __future__ import annotations

import os
import stat
import sys
import textwrap
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent('''\
    #!{python}
    """Stand-in spark-submit: Spark's deploy-mode resolution, then the driver where that mode runs it."""
    import json, os, shutil, stat, sys, tempfile
    sys.path.insert(0, {root!r})
    from airflow_provider_delta.spark.delta_job import env_json_object
    from airflow_provider_delta.spark.job_args import SECRETS_ENV

    argv = sys.argv[1:]
    confs = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--conf")
    defaults = {{}}
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if conf_dir and os.path.exists(os.path.join(conf_dir, "spark-defaults.conf")):
        for line in open(os.path.join(conf_dir, "spark-defaults.conf")):
            parts = line.split(None, 1)
            if len(parts) == 2 and not parts[0].startswith("#"):
                defaults[parts[0]] = parts[1].strip()
    master = argv[argv.index("--master") + 1]
    mode = ((argv[argv.index("--deploy-mode") + 1] if "--deploy-mode" in argv else None)
            or confs.get("spark.submit.deployMode") or defaults.get("spark.submit.deployMode")
            or os.environ.get("DEPLOY_MODE") or "client")
    files = argv[argv.index("--files") + 1].split(",") if "--files" in argv else []
    record = {{"argv": argv, "mode": mode,
              "env": {{k: v for k, v in os.environ.items() if k.startswith("DELTA_")}},
              "files": {{f: stat.S_IMODE(os.stat(f).st_mode) for f in files}}}}
    named = os.environ.get(SECRETS_ENV + "_FILE")
    if named and os.path.isabs(named) and os.path.exists(named):
        record["named_file"] = [named, stat.S_IMODE(os.stat(named).st_mode),
                                stat.S_IMODE(os.stat(os.path.dirname(named)).st_mode)]
    cluster = mode == "cluster"
    if master == "yarn" and cluster:                 # a YARN container on another machine
        container = tempfile.mkdtemp(dir=os.path.dirname({record!r}))
        for f in files:
            shutil.copy(f, container)
        os.chdir(container)
        prefix = "spark.yarn.appMasterEnv."
        environ = {{k[len(prefix):]: v for k, v in confs.items() if k.startswith(prefix)}}
    elif master.startswith("k8s") and cluster:       # a pod: driverEnv confs only (and Kubernetes secrets)
        prefix = "spark.kubernetes.driverEnv."
        environ = {{k[len(prefix):]: v for k, v in confs.items() if k.startswith(prefix)}}
    elif master.startswith("spark") and cluster:     # the legacy client ships sys.env to the master
        environ = dict(os.environ)
        record["sent_to_master"] = {{k: v for k, v in os.environ.items() if k.startswith("DELTA_")}}
    else:                                            # client mode: the driver is this process's child
        environ = dict(os.environ)
    named = environ.get(SECRETS_ENV + "_FILE")
    try:
        if cluster and named and os.path.isabs(named):
            raise OSError("a path on the Airflow worker, which the cluster node does not have")
        record["driver_secrets"] = env_json_object(SECRETS_ENV, environ)
    except Exception as e:
        record["driver_error"] = str(e)
    with open({record!r}, "w") as f:
        json.dump(record, f)
    print("Exit code: 0")
''')


def spark_submit_stand_in(folder: Path) -> tuple[str, Path]:
    """Write the stand-in as ``folder/spark-submit``: its path and the file it records into."""
    record = folder / "record.json"
    path = folder / "spark-submit"
    path.write_text(SCRIPT.format(python=sys.executable, root=ROOT, record=str(record)))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path), record
