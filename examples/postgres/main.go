// Command postgres is an operator of a real PostgreSQL server, built on
// converge: Roles, Databases and scheduled Backups declared in a store and
// made so in PostgreSQL, as "The Reconciliation Loop" imagines an operator
// that knows "how to safely back up a PostgreSQL database". The
// reconcilers are in reconciler.go, one per kind, but Roles, whose domain
// is in rolesworld.go and whose reconciler is reconcile/kit/external's;
// main.go only wires: it
// reads the command line and runs the narrated demo (demo.go), the daemon
// (daemon.go), a backup's process (dumpshim.go) or a restore's
// (restoreshim.go).
//
// Run it from the repository root:
//
//	go run ./examples/postgres            # the narrated demo, on a private PostgreSQL
//	go run ./examples/postgres operator -store-server http://127.0.0.1:7017/store \
//	    -store-token-file /tmp/app/token -pg 'postgres://admin@127.0.0.1:5432/postgres'
//
// # The objects
//
// Each kind is a reconcile/kit/resource Resource in a store served with the
// API-server layer (store/apistore: finalizers, the generation and the
// status owned by the layer), under its prefix; the spec is the user's,
// the status the operator's, with its observed generation, a Ready
// condition and the object's own error:
//
//   - roles/NAME, a Role: login, connection limit, membership in other
//     roles, reconciled against pg_roles (pg_authid) and pg_auth_members,
//     declaratively, as CloudNativePG does: a role no Role names is
//     ignored unless it carries the operator's mark. A role the operator
//     creates is created with its mark and memberships in one transaction.
//   - databases/NAME, a Database: owner, extensions, and a reclaim policy.
//     Deleted with reclaim delete, its database is dropped, only if the
//     operator created it from this store, as its mark says; with retain
//     (the default) it is kept and released, its mark removed. CREATE
//     DATABASE cannot share a transaction with its mark: each create is
//     recorded in the operator's directory (DIR/creating), where no store
//     token writes (reconcile/kit/external's Options.Creates), and a
//     database a crash left unmarked is adopted only by that record,
//     never by what a status says.
//   - backupschedules/NAME, a BackupSchedule: a database, a cron schedule
//     and a retention. At each slot it creates a Backup under the slot's key
//     (reconcile/kit/schedule.SlotKey, with a create-only write, so a crash
//     cannot duplicate it), owned by the schedule (reconcile/kit/owners: its
//     backups go with it); at most one runs at a time, at most one catch-up
//     after downtime, and retention deletes the oldest only once a newer one
//     succeeded. A schedule of method base keeps instead, by its
//     recoveryWindow, every base backup and WAL segment that a restore to
//     an instant inside the window needs (retention.go).
//   - backups/..., a Backup (made by a schedule, or by hand). Method dump
//     (the default): one pg_dump of the database into a file made good only
//     by a rename after fsync (reconcile/kit/intent), verified with
//     pg_restore --list before it counts. Method base: a base backup of the
//     server (pg_basebackup -X none, its WAL from the archive), then a
//     restore point recorded with the database's row count and checksum,
//     taken under a SHARE lock of its tables so that they are the restore
//     point's; then a restore drill: the backup and the archive restored
//     into a scratch cluster on a loopback port (RESTORE-DIR/.drills/ID),
//     recovered to the restore point, its catalog queried and the
//     database's rows and checksum compared, timed and torn down. Only
//     then is the backup Succeeded, its status holding the restore point
//     and the restore's time: a base backup whose WAL is missing or
//     damaged never counts. Either way the attempt's intent is recorded
//     before it starts, and it runs in a process of its own that outlives
//     the operator: after a crash, the next reconcile adopts the running
//     attempt or judges the finished one, and never backs up twice.
//     Backups run one at a time on a server.
//   - restores/NAME, a Restore: a verified base backup's restore point
//     (backup: its key) or an instant (time: the newest verified base
//     backup before it, and the WAL up to it, archived first) restored
//     into a new cluster, RESTORE-DIR/NAME/data on a free loopback port
//     (both in its status), left running; deleting the Restore stops and
//     removes it. It runs in a process of its own, adopted or judged after
//     a crash as a backup's is.
//
// Marks: a role or database the operator creates gets a COMMENT holding a
// reconcile/kit/prune mark, its owner and the store's identity. Only what
// holds the operator's mark from this very store is ever dropped, by a
// deletion or by the pruners, which drop what the operator made and no
// object names any longer, gated by reconcile/kit/prune: never before the first
// sync, while the store is degraded, against a store of another identity,
// or with an empty desired set. An operator started on a fresh store
// against a server holding databases marked from another store drops
// nothing.
//
// The WAL archive (-wal-archive DIR, on the server's host, written by its
// user): the operator sets archive_command to copy each segment into DIR
// (to a temporary name, synced, renamed), built from DIR alone, which must
// be a clean absolute path of plain characters; it puts the setting back
// if changed, asks for archive_mode on (which takes a restart), and names
// a failing archive (pg_stat_archiver) in /readyz, the debug page and the
// status of a base backup waiting for it.
// Restored clusters never archive. /backups answers, as JSON, the last
// verified restore point and the restore's time. Values from a status
// never become a path, a setting or an argument: attempt IDs are
// recomputed from keys, a base backup's first WAL segment is read from its
// own backup_label, a Restore's directory is named by its key.
//
// Finalizers: Roles, Databases, Backups and Restores carry one until their cleanup
// is done, so a deletion made while the operator is down is carried out
// when it starts again.
//
// Drift: two reconcile/kit/drift sources poll the catalog (every
// -drift-interval) and wake the keys whose role or database changed
// behind the operator's back: a role altered or dropped with psql is put
// back, a database dropped by hand is created again.
//
// PostgreSQL's health: it is one *dependency.Dependency, given to each
// PostgreSQL-facing controller (reconcile.Options.Dependencies) and
// checked once every -check-interval for them all, so they see it down
// and back up at the same instant. It is down within 4 × -check-interval of failing, at
// once when a reconcile cannot reach it; while it is down, /readyz and the
// debug page name it, and the controllers hold their keys (a circuit)
// instead of retrying them against a dead server, then retry them at once
// when it is back.
//
// # Commands
//
//	postgres                  the narrated demo: a private PostgreSQL in a temporary
//	                          directory, a store server and the operator, all removed at exit
//	postgres operator [flags] run the operator until SIGINT or SIGTERM
//
// The operator's flags:
//
//	-store-server URL        the store, served with the API-server layer (required)
//	-store-token-file F      the store's bearer token, read from F (mode 0600)
//	-pg DSN                  PostgreSQL's connection string (required); put no
//	                         password in it: use -pg-password-file, $PGPASSWORD or ~/.pgpass
//	-pg-password-file F      PostgreSQL's password, read from F (mode 0600)
//	-pg-bin DIR              where PostgreSQL's programs are (default: found)
//	-wal-archive DIR         the WAL archive, on PostgreSQL's host, written by its user:
//	                         base backups and Restores need it
//	-restore-dir DIR         drills' scratch clusters and Restores' clusters (default DIR/restores)
//	-pg-user USER            the user they run as when the operator runs as root (default postgres)
//	-dir DIR                 the dumps (DIR/backups), the record of CREATE DATABASEs (DIR/creating)
//	                         and operator.url (default .postgres-operator);
//	                         made with mode 0700; one of another user, or that group or
//	                         others may write, is refused (a dump planted there could be
//	                         restored), unless -insecure-permissions, with a warning
//	-addr ADDR               /healthz, /readyz and /debug/converge/ (default 127.0.0.1:7018);
//	                         a loopback address unless -insecure-no-token
//	-insecure-no-token       serve -addr beyond loopback: the debug page has no token
//	-drift-interval D        how often the catalog is polled (default 30s)
//	-prune-interval D        how often the pruners pass (default 10m)
//	-check-interval D        how often PostgreSQL's health is checked (default 5s)
//	-workers N               reconciles at once per kind (default 4)
//	-v                       debug logs
//	-insecure-permissions    use an unsafe -dir, with a warning
//
// With a store served by convergestore, convergectl edits the objects
// (apply reads a resource on standard input):
//
//	export CONVERGE_SERVER=http://127.0.0.1:7017/store
//	echo '{"spec":{"login":true,"connectionLimit":10}}' | convergectl -token-file /tmp/app/token apply roles/app
//	echo '{"spec":{"owner":"app","extensions":["pgcrypto"],"reclaim":"delete"}}' | convergectl -token-file /tmp/app/token apply databases/app
//	echo '{"spec":{"database":"app","schedule":"0 3 * * *","keepSucceeded":7}}' | convergectl -token-file /tmp/app/token apply backupschedules/app
//	echo '{"spec":{"database":"app","schedule":"0 * * * *","method":"base","recoveryWindow":"168h"}}' | convergectl -token-file /tmp/app/token apply backupschedules/app-base
//	echo '{"spec":{"time":"2026-12-07T14:30:00Z"}}' | convergectl -token-file /tmp/app/token apply restores/app_before
//	convergectl -token-file /tmp/app/token get -o status databases/app
//	convergectl -token-file /tmp/app/token delete databases/app
//
// Secrets: the database's password and the store's token are read from
// files or the environment, never from a command line of the operator's
// (a dump gets the password in its environment), and never printed or
// logged.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs the command of args and returns its exit code: 0 done, 1 an
// error, 2 a command line that cannot be read.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		return runDemoCommand(nil, stdout, stderr)
	}
	switch args[0] {
	case "operator":
		return runOperatorCommand(args[1:], stderr)
	case dumpCommand:
		return runDump(args[1:], stderr)
	case restoreCommand:
		return runRestore(args[1:], stderr)
	case "demo":
		return runDemoCommand(args[1:], stdout, stderr)
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "postgres: unknown command %q\n\n%s", args[0], usage)
	return 2
}

const usage = `Usage:
  postgres [demo [-v]]       the narrated demo, on a private PostgreSQL (-v: the operator's logs)
  postgres operator [flags]  run the operator (postgres operator -h for its flags)
`
