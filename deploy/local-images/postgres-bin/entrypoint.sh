#!/bin/sh
# The official postgres image's contract, for what clients set: POSTGRES_USER (postgres), POSTGRES_PASSWORD,
# POSTGRES_DB (the user's name), POSTGRES_INITDB_ARGS, POSTGRES_HOST_AUTH_METHOD (scram-sha-256); the cluster is made in
# $PGDATA on first start; arguments (`postgres -c name=value …`, or the options alone) go to the server, which listens on
# every interface as the postgres user.
set -eu
[ "${1:-postgres}" = postgres ] && [ $# -gt 0 ] && shift
as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups -- "$@"; }
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
auth=${POSTGRES_HOST_AUTH_METHOD:-scram-sha-256}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ] && [ "$auth" != trust ]; then
    echo "POSTGRES_PASSWORD is not set (or set POSTGRES_HOST_AUTH_METHOD=trust)" >&2
    exit 1
  fi
  mkdir -p "$PGDATA" && chown postgres:postgres "$PGDATA" && chmod 700 "$PGDATA"
  pwfile=$(mktemp) && printf '%s\n' "${POSTGRES_PASSWORD:-}" > "$pwfile" && chown postgres "$pwfile"
  # shellcheck disable=SC2086 # POSTGRES_INITDB_ARGS is a list of options, split as the official image splits it
  as_postgres initdb -D "$PGDATA" -U "$user" --pwfile="$pwfile" ${POSTGRES_INITDB_ARGS:-} >/dev/null
  rm -f "$pwfile"
  echo "host all all all $auth" >> "$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\";" | as_postgres postgres --single -D "$PGDATA" postgres >/dev/null
  fi
  echo "PostgreSQL init process complete; ready for start up."
fi
exec setpriv --reuid=postgres --regid=postgres --init-groups -- postgres -D "$PGDATA" -c listen_addresses='*' "$@"
