#!/usr/bin/env python3
"""migrations/postgres/ beside migrations/sqlite/ (issue 21): the same
versions, with the same names, in both dialects; and the schema each gives
(tables, columns with whether they take NULL, named indexes with their
table, columns, uniqueness and whether they are partial) the same. The
SQLite side is the schema the conformance suite checks for the SQLite
store, so a Postgres schema equal to it is the conformance suite's. Each
Postgres migration is applied in order, each in one transaction, to a
real PostgreSQL 15 started here: initdb into a temporary directory (as the
postgres user when run as root: initdb refuses root), listening on a Unix
socket in that directory only, stopped after. Then the append-only rule:
an event can be written, and neither updated, deleted nor truncated.

Usage: check-pg-migrations.py SOURCE_ROOT. Exit 77 (skipped) when
PostgreSQL 15's binaries aren't installed (packaging/dev/deps.sh test
installs them)."""
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

SKIP = 77
PG_BIN = "/usr/lib/postgresql/15/bin"
NAME = re.compile(r"^(\d{5})_[a-z0-9_]+\.sql$")


def fail(text):
    print(f"check-pg-migrations: {text}", file=sys.stderr)
    sys.exit(1)


def versions(directory):
    names = sorted(f for f in os.listdir(directory) if f.endswith(".sql"))
    for name in names:
        if not NAME.match(name):
            fail(f"{directory}/{name}: not NNNNN_name.sql")
    numbers = [int(NAME.match(n).group(1)) for n in names]
    if numbers != list(range(1, len(numbers) + 1)):
        fail(f"{directory}: versions {numbers} are not 1, 2, 3, ... without gaps")
    return names


def sqlite_schema(directory, names):
    db = sqlite3.connect(":memory:")
    for name in names:
        db.executescript(open(os.path.join(directory, name)).read())
    schema = {"tables": {}, "indexes": {}}
    tables = [r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")]
    for table in tables:
        columns = {}
        for _, column, _, notnull, _, pk in db.execute(f"PRAGMA table_info({table})"):
            columns[column] = bool(notnull or pk)
        schema["tables"][table] = columns
    for name, table, sql in db.execute(
            "SELECT name, tbl_name, sql FROM sqlite_master "
            "WHERE type = 'index' AND name NOT LIKE 'sqlite_autoindex_%'"):
        unique = any(row[1] == name and row[2] for row in db.execute(f"PRAGMA index_list({table})"))
        columns = [row[2] for row in db.execute(f"PRAGMA index_info({name})")]
        schema["indexes"][name] = (table, unique, tuple(columns), " WHERE " in sql.upper())
    return schema


class Postgres:
    """A private PostgreSQL 15 in @root, on a Unix socket only."""

    def __init__(self, root):
        self.root = root
        self.data = os.path.join(root, "data")
        self.socket_dir = os.path.join(root, "run")
        os.mkdir(self.socket_dir)
        self.as_user = []
        if os.geteuid() == 0:
            shutil.chown(root, "postgres", "postgres")
            shutil.chown(self.socket_dir, "postgres", "postgres")
            self.as_user = ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups"]
        self.server = None

    def start(self):
        subprocess.run(self.as_user + [f"{PG_BIN}/initdb", "-D", self.data, "--no-sync", "-A",
                                       "trust", "-U", "einsora", "-E", "UTF8", "--locale=C"],
                       check=True, stdout=subprocess.DEVNULL)
        self.log = open(os.path.join(self.root, "postgres.log"), "w")
        self.server = subprocess.Popen(
            self.as_user + [f"{PG_BIN}/postgres", "-D", self.data, "-k", self.socket_dir,
                            "-c", "listen_addresses=", "-c", "fsync=off"],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if subprocess.run([f"{PG_BIN}/pg_isready", "-q", "-h", self.socket_dir]).returncode == 0:
                return
            if self.server.poll() is not None:
                break
            time.sleep(0.1)
        fail("PostgreSQL didn't start:\n" + open(os.path.join(self.root, "postgres.log")).read())

    def psql(self, *args, check=True):
        return subprocess.run([f"{PG_BIN}/psql", "-h", self.socket_dir, "-U", "einsora", "-d",
                               "postgres", "-X", "-q", "-v", "ON_ERROR_STOP=1", *args],
                              capture_output=True, text=True, check=False)

    def rows(self, query):
        run = self.psql("-At", "-F", "|", "-c", query)
        if run.returncode != 0:
            fail(f"{query}: {run.stderr}")
        return [line.split("|") for line in run.stdout.splitlines() if line]

    def stop(self):
        if self.server is not None and self.server.poll() is None:
            self.server.terminate()
            try:
                self.server.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.server.kill()
                self.server.wait()


def pg_schema(pg):
    schema = {"tables": {}, "indexes": {}}
    for (table,) in pg.rows("SELECT table_name FROM information_schema.tables "
                            "WHERE table_schema = 'public' AND table_type = 'BASE TABLE'"):
        schema["tables"][table] = {
            column: nullable == "NO" for column, nullable in pg.rows(
                "SELECT column_name, is_nullable FROM information_schema.columns "
                f"WHERE table_schema = 'public' AND table_name = '{table}'")}
    # Named indexes only: those behind a primary key or an inline UNIQUE
    # are the constraints' (SQLite's sqlite_autoindex_* are left out too).
    for name, table, unique, columns, partial in pg.rows(
            "SELECT i.relname, t.relname, ix.indisunique, "
            "  (SELECT string_agg(a.attname, ',' ORDER BY k.ord) "
            "   FROM unnest(ix.indkey) WITH ORDINALITY AS k(attnum, ord) "
            "   JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = k.attnum), "
            "  ix.indpred IS NOT NULL "
            "FROM pg_index ix JOIN pg_class i ON i.oid = ix.indexrelid "
            "JOIN pg_class t ON t.oid = ix.indrelid "
            "JOIN pg_namespace n ON n.oid = t.relnamespace "
            "WHERE n.nspname = 'public' "
            "AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = ix.indexrelid "
            "AND c.contype IN ('p', 'u', 'x'))"):
        schema["indexes"][name] = (table, unique == "t", tuple(columns.split(",")), partial == "t")
    return schema


def compare(sqlite_side, pg_side):
    problems = []
    a, b = sqlite_side["tables"], pg_side["tables"]
    for table in sorted(set(a) | set(b)):
        if table not in b:
            problems.append(f"table {table}: in SQLite's schema, not in Postgres's")
        elif table not in a:
            problems.append(f"table {table}: in Postgres's schema, not in SQLite's")
        elif a[table] != b[table]:
            for column in sorted(set(a[table]) | set(b[table])):
                if a[table].get(column) != b[table].get(column):
                    problems.append(f"{table}.{column}: SQLite says "
                                    f"{describe(a[table].get(column))}, Postgres "
                                    f"{describe(b[table].get(column))}")
    a, b = sqlite_side["indexes"], pg_side["indexes"]
    for name in sorted(set(a) | set(b)):
        if a.get(name) != b.get(name):
            problems.append(f"index {name}: SQLite {a.get(name)}, Postgres {b.get(name)}")
    return problems


def describe(not_null):
    return "no such column" if not_null is None else ("NOT NULL" if not_null else "nullable")


def append_only(pg):
    setup = (
        "INSERT INTO tenants VALUES ('00000000-0000-7000-8000-000000000001', 't', 1, "
        "'2026-12-07T00:00:00.000000Z');"
        "INSERT INTO workloads (id, tenant_id, kind, name, state, region, gpu_class, image, gpus, "
        "attempt, version, created_by, created_at, updated_at) VALUES "
        "('00000000-0000-7000-8000-000000000002', '00000000-0000-7000-8000-000000000001', "
        "'notebook', 'n', 'pending', 'r', 'cpu', 'i', 0, 0, 0, 's', "
        "'2026-12-07T00:00:00.000000Z', '2026-12-07T00:00:00.000000Z');"
        "INSERT INTO workload_events (id, tenant_id, workload_id, to_state, reason, attempt, "
        "created_at) VALUES ('00000000-0000-7000-8000-000000000003', "
        "'00000000-0000-7000-8000-000000000001', '00000000-0000-7000-8000-000000000002', "
        "'pending', 'created', 0, '2026-12-07T00:00:00.000000Z');")
    run = pg.psql("-c", setup)
    if run.returncode != 0:
        fail(f"writing an event: {run.stderr}")
    for statement in ("UPDATE workload_events SET reason = 'changed'",
                      "DELETE FROM workload_events", "TRUNCATE workload_events CASCADE"):
        run = pg.psql("-c", statement)
        if run.returncode == 0 or "append-only" not in run.stderr:
            fail(f"{statement}: not refused as append-only ({run.returncode}: {run.stderr})")
    # Unknown JSON in an inventory is refused, as SQLite's json_valid() does.
    run = pg.psql("-c", "INSERT INTO machines (id, tenant_id, name, region, os, cpus, memory_mib, "
                        "sharing, inventory, created_at) VALUES "
                        "('00000000-0000-7000-8000-000000000004', "
                        "'00000000-0000-7000-8000-000000000001', 'm', 'r', 'linux', 1, 1, "
                        "'private', '{not json', '2026-12-07T00:00:00.000000Z')")
    if run.returncode == 0:
        fail("a machine whose inventory isn't JSON was written")


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("EINSORA_SOURCE_ROOT", ".")
    sqlite_dir = os.path.join(root, "migrations", "sqlite")
    pg_dir = os.path.join(root, "migrations", "postgres")
    sqlite_names, pg_names = versions(sqlite_dir), versions(pg_dir)
    if sqlite_names != pg_names:
        only_sqlite = sorted(set(sqlite_names) - set(pg_names))
        only_pg = sorted(set(pg_names) - set(sqlite_names))
        fail(f"the dialects differ: only in sqlite/: {only_sqlite}; only in postgres/: {only_pg}")
    print(f"ok: {len(pg_names)} versions in both dialects")
    if not os.path.exists(f"{PG_BIN}/postgres"):
        print(f"skipped: no PostgreSQL 15 in {PG_BIN} (apt-get install postgresql-15)")
        sys.exit(SKIP)
    expected = sqlite_schema(sqlite_dir, sqlite_names)
    work = tempfile.mkdtemp(prefix="einsora-pg-")
    pg = Postgres(work)
    try:
        pg.start()
        for name in pg_names:
            run = pg.psql("--single-transaction", "-f", os.path.join(pg_dir, name))
            if run.returncode != 0:
                fail(f"postgres/{name}: {run.stderr}")
        problems = compare(expected, pg_schema(pg))
        if problems:
            fail("the schemas differ:\n  " + "\n  ".join(problems))
        print(f"ok: {len(expected['tables'])} tables and {len(expected['indexes'])} named indexes "
              "the same in both")
        append_only(pg)
        print("ok: workload_events is append-only in Postgres too")
    finally:
        pg.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
