package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/postgres/internal/cluster"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/store"
)

// killChange is one change of the kill test's burst.
type killChange struct {
	what  string
	apply func(t *testing.T, e *pgEnv)
}

// killBurst returns round r's burst of 50 changes: 20 roles and 10
// databases created, 5 backups of bigdb made by hand and a schedule of
// it, 10 roles altered, and 2 roles and 2 databases deleted, in that
// order. Names carry the round, so that no name is created twice.
func killBurst(r int) (changes []killChange, kept, deleted []string) {
	role := func(i int) string { return fmt.Sprintf("k%d_r%02d", r, i) }
	db := func(i int) string { return fmt.Sprintf("k%d_d%02d", r, i) }
	add := func(what string, f func(t *testing.T, e *pgEnv)) {
		changes = append(changes, killChange{what, f})
	}
	for i := range 20 {
		add("create role "+role(i), func(t *testing.T, e *pgEnv) {
			put(t, e.stores.Roles, RolePrefix+role(i), RoleSpec{Login: i%2 == 0, ConnectionLimit: intp(i)})
		})
	}
	for i := range 10 {
		spec := DatabaseSpec{Owner: role(i), Reclaim: Delete}
		if i == 0 {
			spec.Extensions = []string{"pgcrypto"}
		}
		add("create database "+db(i), func(t *testing.T, e *pgEnv) { put(t, e.stores.Databases, DatabasePrefix+db(i), spec) })
	}
	for i := range 5 {
		key := fmt.Sprintf("%sk%d-b%d", BackupPrefix, r, i)
		add("back up bigdb "+key, func(t *testing.T, e *pgEnv) { put(t, e.stores.Backups, key, BackupSpec{Database: "bigdb"}) })
		kept = append(kept, key)
	}
	add("schedule bigdb's backups", func(t *testing.T, e *pgEnv) {
		put(t, e.stores.Schedules, fmt.Sprintf("%sk%d", SchedulePrefix, r), BackupScheduleSpec{Database: "bigdb", Schedule: "* * * * *", KeepSucceeded: 2})
	})
	for i := range 10 {
		add("alter role "+role(i), func(t *testing.T, e *pgEnv) {
			put(t, e.stores.Roles, RolePrefix+role(i), RoleSpec{Login: true, ConnectionLimit: intp(100 + i), InRoles: []string{role(i + 1)}})
		})
	}
	for _, key := range []string{RolePrefix + role(16), RolePrefix + role(17), DatabasePrefix + db(8), DatabasePrefix + db(9)} {
		add("delete "+key, func(t *testing.T, e *pgEnv) { externaltest.Delete(t, e.stores.Raw, key) })
		deleted = append(deleted, key)
	}
	for i := range 20 {
		if i != 16 && i != 17 {
			kept = append(kept, RolePrefix+role(i))
		}
	}
	for i := range 8 {
		kept = append(kept, DatabasePrefix+db(i))
	}
	return changes, kept, deleted
}

func envInt(t *testing.T, name string, def int) int {
	if s := os.Getenv(name); s != "" {
		n, err := strconv.Atoi(s)
		require.NoError(t, err, name)
		return n
	}
	return def
}

// The operator, a process of its own, is SIGKILLed at random moments
// during a burst of 50 changes, and then while dumps run, and started
// again each time. Everything converges; PostgreSQL's DDL log shows each
// CREATE exactly once; no two dumps overlap, and no attempt is dumped
// twice; every dump counted in status passes pg_restore --list and has the
// size recorded, so none counted is half-written. POSTGRES_KILL_ROUNDS
// (bursts of 50 changes, default 1) and POSTGRES_KILL_KILLS (default 10)
// make longer runs.
func TestSIGKILLedOperatorConvergesCreatingEachObjectOnceAndDumpingEachBackupOnce(t *testing.T) {
	rounds, nKills := envInt(t, "POSTGRES_KILL_ROUNDS", 1), envInt(t, "POSTGRES_KILL_KILLS", 10)
	e := newPGEnv(t)
	e.query("postgres", "CREATE DATABASE bigdb")
	e.query("bigdb", "CREATE TABLE t AS SELECT g AS n, md5(g::text) AS s FROM generate_series(1, 300000) g")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	k := &killer{t: t, e: e, rng: rng, left: nKills}
	k.op = e.startProcess()
	var kept, deleted []string
	for r := range rounds {
		changes, keep, del := killBurst(r)
		kept, deleted = append(kept, keep...), append(deleted, del...)
		for _, c := range changes {
			c.apply(t, e)
			k.maybeKill(c.what)
			k.pause(100 * time.Millisecond)
		}
	}
	k.killDuringDumps()
	t.Logf("%d kills", k.kills)

	checkKillConverged(t, e, kept, deleted)
	checkCreatesOnce(t, e, kept)
	ids := checkDumps(t, e)
	checkDumpSessions(t, e, ids)
	logs := e.operatorLogs()
	adopted := strings.Count(logs, "adopting a running dump")
	judged := strings.Count(logs, "judging a dump another operator process started")
	t.Logf("after restarts: %d dumps adopted while running, %d judged by their result", adopted, judged)
	require.Positive(t, adopted, "no operator found a dump running: the test proved nothing about adoption")
	require.Positive(t, judged, "no operator judged a dump that finished while none ran")
}

// killer SIGKILLs and restarts the operator process.
type killer struct {
	t     *testing.T
	e     *pgEnv
	rng   *rand.Rand
	op    *operatorProc
	left  int // kills still to make
	kills int
	next  time.Time
}

// maybeKill kills and restarts the operator if its random moment has come.
func (k *killer) maybeKill(after string) {
	if k.left <= 3 || time.Now().Before(k.next) { // the last three are kept for dumps
		return
	}
	k.kill(after)
}

func (k *killer) kill(after string) {
	k.op.Kill()
	k.kills++
	k.left--
	k.t.Logf("kill %d, after %s", k.kills, after)
	k.op = k.e.startProcess()
	k.next = time.Now().Add(time.Duration(200+k.rng.IntN(800)) * time.Millisecond)
}

// killDuringDumps spends the kills left while backups of bigdb run: six
// are made at once, and the operator is killed whenever one of them runs
// unfinished, restarted, and killed again. The dumps run one at a time
// (the server's dump lock), so the next operator finds some still running
// and adopts them, and others finished, which it judges.
func (k *killer) killDuringDumps() {
	for i := 0; k.left > 0; i++ {
		var keys []string
		for j := range 6 {
			key := fmt.Sprintf("%sduring-%d-%d", BackupPrefix, i, j)
			put(k.t, k.e.stores.Backups, key, BackupSpec{Database: "bigdb"})
			keys = append(keys, key)
		}
		for k.left > 0 {
			running := ""
			externaltest.WaitFor(k.t, k.e.stores.Backups, BackupPrefix, convergeLimit, "a backup running or all finished", func(objs map[string]store.Object[*Backup]) bool {
				done := 0
				for _, key := range keys {
					obj, ok := objs[key]
					switch {
					case !ok:
					case obj.Value.Status.Finished():
						done++
					case obj.Value.Status.Phase == BackupRunning:
						running = key
						return true
					}
				}
				return done == len(keys)
			})
			if running == "" {
				break // all finished: six more
			}
			k.kill("the dump of " + running + " started")
		}
	}
}

func (k *killer) pause(most time.Duration) {
	select {
	case <-time.After(time.Duration(k.rng.Int64N(int64(most)))):
	case <-k.t.Context().Done():
	}
}

// checkKillConverged waits until every kept object is converged (every
// backup finished) and every deleted one gone from the store and from
// PostgreSQL.
func checkKillConverged(t *testing.T, e *pgEnv, kept, deleted []string) {
	for _, key := range kept {
		switch {
		case strings.HasPrefix(key, RolePrefix):
			externaltest.WaitConverged(t, e.stores.Roles, 2*convergeLimit, key)
		case strings.HasPrefix(key, DatabasePrefix):
			externaltest.WaitConverged(t, e.stores.Databases, 2*convergeLimit, key)
		}
	}
	externaltest.WaitFor(t, e.stores.Backups, BackupPrefix, 2*convergeLimit, "every backup finished", func(objs map[string]store.Object[*Backup]) bool {
		for _, o := range objs {
			if !o.Value.Status.Finished() {
				return false
			}
		}
		return true
	})
	externaltest.WaitGone(t, e.stores.Raw, 2*convergeLimit, deleted...)
	for _, key := range deleted {
		name := key[strings.Index(key, "/")+1:]
		require.Equal(t, "0", e.query("postgres", fmt.Sprintf(
			"SELECT (SELECT count(*) FROM pg_roles WHERE rolname = '%[1]s') + (SELECT count(*) FROM pg_database WHERE datname = '%[1]s')", name)), key)
	}
	require.Equal(t, "t|101|k0_r02", e.query("postgres", roleRow("k0_r01")), "an altered role as its last spec says")
}

// checkCreatesOnce reads PostgreSQL's DDL log: the operator created each
// kept role and database, and pgcrypto, exactly once, and nothing twice.
// A CREATE ROLE whose transaction did not commit (the operator was killed
// inside it, which rolled it back) created nothing and is not counted.
func checkCreatesOnce(t *testing.T, e *pgEnv, kept []string) {
	lines, err := e.pg.ReadLog()
	require.NoError(t, err)
	creates := map[string]int{}
	for i, l := range lines {
		sql, ok := l.Statement()
		if !ok || l.App != appName || !strings.HasPrefix(sql, "CREATE ") {
			continue
		}
		fields := strings.Fields(sql)
		if fields[1] == "ROLE" && !roleCreateCommitted(t, e, lines[i+1:], l.PID, fields[2]) {
			continue
		}
		creates[fields[1]+" "+strings.Trim(fields[2], `"`)]++
	}
	for what, n := range creates {
		require.Equal(t, 1, n, "%s was run %d times", what, n)
	}
	for _, key := range kept {
		kind, name, _ := strings.Cut(key, "/")
		switch kind + "/" {
		case RolePrefix:
			require.Equal(t, 1, creates["ROLE "+name], key)
		case DatabasePrefix:
			require.Equal(t, 1, creates["DATABASE "+name], key)
		}
	}
	require.Equal(t, 1, creates["EXTENSION pgcrypto"])
}

// checkDumps checks every backup's dump: one attempt, succeeded, its file
// complete (the size recorded) and readable by pg_restore --list. It
// returns the attempts' IDs.
func checkDumps(t *testing.T, e *pgEnv) map[string]bool {
	objs, _, err := e.stores.Backups.List(t.Context(), BackupPrefix)
	require.NoError(t, err)
	ids := map[string]bool{}
	var longest time.Duration
	for _, o := range objs {
		st := o.Value.Status
		require.Equal(t, BackupSucceeded, st.Phase, "%s: %s", o.Key, st.Error)
		require.Equal(t, 1, st.Dump.Attempt, o.Key)
		res := st.Dump.Result
		fi, err := os.Stat(res.File)
		require.NoError(t, err, o.Key)
		require.Equal(t, res.Bytes, fi.Size(), "%s: the file counted is the file written whole", o.Key)
		require.False(t, strings.HasPrefix(filepath.Base(res.File), "."), "%s counts a temporary file", o.Key)
		requireRestorable(t, e, res.File)
		ids[st.Dump.ID] = true
		longest = max(longest, res.Finished.Sub(res.Started))
	}
	require.NotEmpty(t, ids)
	t.Logf("%d dumps, the longest %v (its wait for the dump lock included)", len(ids), longest)
	return ids
}

// disconnectionLag bounds how late PostgreSQL may log a session's end: a
// backend logs "disconnection" after its client has gone and after it has
// released its locks (proc_exit runs the shared-memory callbacks first),
// so on a loaded host the next dump, waiting on that lock, may log its
// connection a few milliseconds before. Two dumps run at once would
// overlap by the length of a dump, well beyond it.
const disconnectionLag = 100 * time.Millisecond

// checkDumpSessions reads pg_dump's sessions in PostgreSQL's log (their
// application_name is the attempt's ID): one per attempt, that of every
// backup counted (ids) included, and none overlapping another.
func checkDumpSessions(t *testing.T, e *pgEnv, ids map[string]bool) {
	lines, err := e.pg.ReadLog()
	require.NoError(t, err)
	type session struct {
		id         string
		start, end time.Time
	}
	byPID := map[int]*session{}
	var sessions []*session
	for _, l := range lines {
		if _, app, ok := strings.Cut(l.Message, "connection authorized: "); ok {
			_, name, _ := strings.Cut(app, "application_name=")
			name = strings.TrimSpace(name)
			if strings.HasPrefix(name, "backups_") && !strings.HasSuffix(name, "/lock") {
				s := &session{id: name, start: l.Time}
				byPID[l.PID] = s
				sessions = append(sessions, s)
			}
		} else if s := byPID[l.PID]; s != nil && strings.Contains(l.Message, "disconnection:") {
			s.end = l.Time
			delete(byPID, l.PID)
		}
	}
	seen := map[string]int{}
	for i, s := range sessions {
		seen[s.id]++
		require.False(t, s.end.IsZero(), "%s's dump session never ended", s.id)
		if i > 0 {
			prev := sessions[i-1]
			require.False(t, s.start.Before(prev.end.Add(-disconnectionLag)), "the dumps %s and %s overlap", prev.id, s.id)
		}
	}
	for id, n := range seen {
		require.Equal(t, 1, n, "pg_dump sessions of attempt %s", id)
	}
	for id := range ids {
		require.Equal(t, 1, seen[id], "pg_dump sessions of attempt %s", id)
	}
}

// roleCreateCommitted reports whether the transaction of a CREATE ROLE of
// role, logged by the server process pid, committed. The operator comments
// on a role it creates in the same transaction (roleStatements), and that
// next statement's line carries the transaction's ID (the CREATE's line was
// written before the transaction had one); without it, the transaction
// ended before the comment, rolled back.
func roleCreateCommitted(t *testing.T, e *pgEnv, after []cluster.LogLine, pid int, role string) bool {
	for _, l := range after {
		if l.PID != pid {
			continue
		}
		sql, ok := l.Statement()
		if !ok || !strings.HasPrefix(sql, "COMMENT ON ROLE "+role+" ") || l.XID == 0 {
			return false
		}
		return e.query("postgres", fmt.Sprintf("SELECT txid_status(%d)", l.XID)) == "committed"
	}
	return false
}
