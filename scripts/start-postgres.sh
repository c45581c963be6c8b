#!/usr/bin/env bash
# Start the local PostgreSQL cluster (if it is not running) and make sure the test role and
# database exist. Idempotent. Prints the connection URL on stdout (and nothing else there), so
# callers can do: export LONGBUILD_PG_URL="$(scripts/start-postgres.sh)".
# Override with PG_VERSION / PG_CLUSTER / PG_PORT.
set -euo pipefail
PG_VERSION="${PG_VERSION:-15}"
PG_CLUSTER="${PG_CLUSTER:-main}"
ROLE=longbuild
PASSWORD=longbuild
DB=longbuild_test

log() { echo "start-postgres: $*" >&2; }

if ! command -v pg_ctlcluster >/dev/null 2>&1; then
  log "pg_ctlcluster not found: PostgreSQL ${PG_VERSION} is not installed here"
  exit 1
fi

# Run psql as the postgres superuser over the local socket (peer auth).
as_postgres() {
  if [ "$(id -u)" = "0" ]; then
    if command -v runuser >/dev/null 2>&1; then runuser -u postgres -- "$@"; else su postgres -s /bin/sh -c "$(printf '%q ' "$@")"; fi
  elif [ "$(id -un)" = "postgres" ]; then
    "$@"
  else
    sudo -n -u postgres "$@"
  fi
}

status="$(pg_lsclusters --no-header | awk -v v="$PG_VERSION" -v c="$PG_CLUSTER" '$1==v && $2==c {print $4}')"
if [ -z "$status" ]; then
  log "no cluster ${PG_VERSION}/${PG_CLUSTER}"
  exit 1
fi
if [ "$status" != "online" ]; then
  log "starting cluster ${PG_VERSION}/${PG_CLUSTER}"
  pg_ctlcluster "$PG_VERSION" "$PG_CLUSTER" start >&2
fi
port="${PG_PORT:-$(pg_lsclusters --no-header | awk -v v="$PG_VERSION" -v c="$PG_CLUSTER" '$1==v && $2==c {print $3}')}"

# Wait until it accepts connections (start returns once the postmaster is up, but be sure).
for _ in $(seq 1 50); do
  if as_postgres psql -p "$port" -qAtc 'SELECT 1' >/dev/null 2>&1; then break; fi
  sleep 0.2
done

psql_su() { as_postgres psql -p "$port" -v ON_ERROR_STOP=1 -qAt "$@"; }
if [ "$(psql_su -c "SELECT 1 FROM pg_roles WHERE rolname = '${ROLE}'")" != "1" ]; then
  log "creating role ${ROLE}"
  psql_su -c "CREATE ROLE ${ROLE} LOGIN PASSWORD '${PASSWORD}'" >&2
else
  psql_su -c "ALTER ROLE ${ROLE} LOGIN PASSWORD '${PASSWORD}'" >&2
fi
if [ "$(psql_su -c "SELECT 1 FROM pg_database WHERE datname = '${DB}'")" != "1" ]; then
  log "creating database ${DB}"
  psql_su -c "CREATE DATABASE ${DB} OWNER ${ROLE}" >&2
fi

echo "postgres://${ROLE}:${PASSWORD}@127.0.0.1:${port}/${DB}"
