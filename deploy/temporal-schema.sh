#!/bin/sh
# Creates or upgrades Temporal's two PostgreSQL databases. It is safe to run
# on every start: create is skipped when the database exists, and
# update-schema applies only the versions not applied yet.
#
# docker-compose.yml runs it in the admin-tools image; the local cluster
# (go run ./dev/cmd/cluster) runs it with its own PostgreSQL address and the
# schema directory of the server module.
set -eu
seeds=${POSTGRES_SEEDS:-postgresql}
port=${DB_PORT:-5432}
schema=${SCHEMA_DIR:-/etc/temporal/schema}
tool() { temporal-sql-tool --plugin postgres12 --ep "$seeds" -p "$port" -u temporal --pw temporal "$@"; }
for db in temporal temporal_visibility; do
	case $db in temporal) dir=temporal ;; *) dir=visibility ;; esac
	tool --db "$db" create || true
	tool --db "$db" setup-schema -v 0.0 || true
	tool --db "$db" update-schema -d "$schema/postgresql/v12/$dir/versioned"
done
