#!/bin/sh
# Creates or upgrades Temporal's two PostgreSQL databases. It is safe to run
# on every start: create is skipped when the database exists, and
# update-schema applies only the versions not applied yet.
set -eu
tool() { temporal-sql-tool --plugin postgres12 --ep postgresql -p 5432 -u temporal --pw temporal "$@"; }
for db in temporal temporal_visibility; do
	case $db in temporal) dir=temporal ;; *) dir=visibility ;; esac
	tool --db "$db" create || true
	tool --db "$db" setup-schema -v 0.0 || true
	tool --db "$db" update-schema -d "/etc/temporal/schema/postgresql/v12/$dir/versioned"
done
