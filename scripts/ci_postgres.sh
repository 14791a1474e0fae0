#!/usr/bin/env bash
# A PostgreSQL server for the SQL commit-owner tests in CI (`make test` runs this when CI is set).
#
# - Nothing to do when a server already answers at DELTA_TEST_POSTGRES_URL
#   (default postgresql://postgres@127.0.0.1:5432/test).
# - Installs Debian's `postgresql` package when initdb / pg_ctl are missing (apt-get update once).
# - Otherwise initdb's a data directory (DELTA_CI_POSTGRES_DIR, default /tmp/delta-ci-postgres-<port>)
#   as the `postgres` OS user (the server refuses to run as root), trust authentication for local
#   and 127.0.0.1 connections, starts it with pg_ctl on the URL's host and port, waits (bounded)
#   until pg_isready, and creates the URL's database. A later run reuses the same directory.
# Only loopback URLs are served; anything else is left to whoever runs that server.
# Exit status non-zero, with one line saying why, when no server can be had.
set -euo pipefail

URL="${DELTA_TEST_POSTGRES_URL:-postgresql://postgres@127.0.0.1:5432/test}"
WAIT_SECONDS="${DELTA_CI_POSTGRES_WAIT:-60}"

say() { echo "ci_postgres: $*"; }
die() { echo "ci_postgres: ERROR: $*" >&2; exit 1; }

# host, port, user, database of the URL (python3 is on every machine that runs this project)
read -r PGH PGP PGU PGD < <(python3 - "$URL" <<'PY'
import sys
from urllib.parse import urlsplit
u = urlsplit(sys.argv[1].replace("postgresql+psycopg2://", "postgresql://"))
print(u.hostname or "127.0.0.1", u.port or 5432, u.username or "postgres", (u.path or "/").lstrip("/") or "postgres")
PY
)

pg_bin_dir() {  # the directory holding initdb and pg_ctl, or nothing
    local d
    if command -v initdb >/dev/null 2>&1 && command -v pg_ctl >/dev/null 2>&1; then
        dirname "$(readlink -f "$(command -v initdb)")"; return
    fi
    for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
        if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then echo "$d"; return; fi
    done
}

answers() {  # a real connection to the URL works
    if command -v psql >/dev/null 2>&1; then
        PGCONNECT_TIMEOUT=5 psql "$URL" -Atqc 'select 1' >/dev/null 2>&1
    else
        return 1
    fi
}

if answers; then
    say "a server already answers at $URL"
    exit 0
fi

case "$PGH" in
    127.*|localhost|::1) ;;
    *) die "no server answers at $URL and its host $PGH is not this machine's loopback: not starting one" ;;
esac

BIN="$(pg_bin_dir || true)"
installed_now=""
if [ -z "$BIN" ]; then
    [ "$(id -u)" = 0 ] || die "initdb/pg_ctl not found and not root: install Debian's postgresql package"
    say "installing Debian's postgresql package"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null || die "apt-get update failed"
    apt-get install -y -qq postgresql >/dev/null || die "apt-get install postgresql failed"
    BIN="$(pg_bin_dir || true)"
    [ -n "$BIN" ] || die "postgresql installed, but no initdb/pg_ctl under /usr/lib/postgresql/*/bin"
    installed_now=1
fi
PSQL="$BIN/psql"; [ -x "$PSQL" ] || PSQL="$(command -v psql)"
ISREADY="$BIN/pg_isready"; [ -x "$ISREADY" ] || ISREADY="$(command -v pg_isready)"

if answers; then  # the package's own cluster may have started and be good enough
    say "a server answers at $URL"
    exit 0
fi

if "$ISREADY" -q -h "$PGH" -p "$PGP" -t 3; then
    # Something listens on that port but refuses the URL. If it is the cluster Debian's package
    # created just now (password authentication), stop it and run ours; anything else is not ours.
    if [ -n "$installed_now" ] && command -v pg_lsclusters >/dev/null 2>&1; then
        while read -r ver name port status _; do
            if [ "$port" = "$PGP" ] && [ "$status" = online ]; then
                say "stopping the cluster $ver/$name that the package started on port $PGP"
                pg_ctlcluster "$ver" "$name" stop || true
            fi
        done < <(pg_lsclusters -h 2>/dev/null)
    fi
    if "$ISREADY" -q -h "$PGH" -p "$PGP" -t 3; then
        die "a server listens on $PGH:$PGP but refuses $URL (not started by this script): fix its access or set DELTA_TEST_POSTGRES_URL"
    fi
fi

DATA="${DELTA_CI_POSTGRES_DIR:-${TMPDIR:-/tmp}/delta-ci-postgres-$PGP}"
as_pg() {  # run a server binary as the postgres OS user when we are root
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || useradd --system --home-dir "$DATA" --shell /bin/bash postgres
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

mkdir -p "$DATA"
[ "$(id -u)" = 0 ] && chown postgres: "$DATA" 2>/dev/null || true
chmod 700 "$DATA"
if [ ! -f "$DATA/PG_VERSION" ]; then
    say "initdb $DATA ($BIN)"
    as_pg "$BIN/initdb" -D "$DATA" -U postgres --auth=trust --encoding=UTF8 --no-instructions \
        >"$DATA.initdb.log" 2>&1 || die "initdb failed: $(tail -n 1 "$DATA.initdb.log")"
fi
mkdir -p "$DATA/socket"
[ "$(id -u)" = 0 ] && chown postgres: "$DATA/socket" || true

if ! as_pg "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; then
    say "starting PostgreSQL on $PGH:$PGP (data: $DATA)"
    as_pg "$BIN/pg_ctl" -D "$DATA" -l "$DATA/server.log" -w -t "$WAIT_SECONDS" \
        -o "-c listen_addresses=$PGH -p $PGP -k $DATA/socket" start >/dev/null \
        || die "pg_ctl start failed: $(tail -n 1 "$DATA/server.log" 2>/dev/null)"
fi

for _ in $(seq 1 "$WAIT_SECONDS"); do
    "$ISREADY" -q -h "$PGH" -p "$PGP" -t 2 && break
    sleep 1
done
"$ISREADY" -q -h "$PGH" -p "$PGP" -t 2 || die "the server on $PGH:$PGP is not ready after ${WAIT_SECONDS} s (log: $DATA/server.log)"

if [ "$PGU" != postgres ]; then
    "$PSQL" -h "$PGH" -p "$PGP" -U postgres -d postgres -Atqc \
        "select 1 from pg_roles where rolname = '$PGU'" | grep -q 1 \
        || "$PSQL" -h "$PGH" -p "$PGP" -U postgres -d postgres -qc "create role \"$PGU\" login superuser" >/dev/null
fi
if ! "$PSQL" -h "$PGH" -p "$PGP" -U postgres -d postgres -Atqc \
        "select 1 from pg_database where datname = '$PGD'" | grep -q 1; then
    "$PSQL" -h "$PGH" -p "$PGP" -U postgres -d postgres -qc "create database \"$PGD\" owner \"$PGU\"" >/dev/null \
        || die "could not create database $PGD"
fi

answers || die "started a server on $PGH:$PGP, but $URL still does not answer"
say "PostgreSQL answers at $URL"
