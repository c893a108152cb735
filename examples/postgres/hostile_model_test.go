package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/postgres/internal/cluster"
	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/intent"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// The hostile-state model: a token holder writes arbitrary and hostile
// spec and status values into every field of every kind, at random, while
// the operator runs; then the operator has changed nothing outside what it
// owns (its own login role, the privileged roles and their memberships are
// as they were, a directory beside its backups is as it was, its backups'
// directory holds only dumps and attempt files it names, every database
// keeps plpgsql, the databases that existed before it are neither dropped
// nor marked, whatever a status forged as creating says), each object the
// contract refuses is refused as a terminal Invalid, and a refused object
// is not reconciled again. Last, every object is deleted and goes (a
// role that owns a database its Database retained goes once a DBA gives
// what it owns away: PostgreSQL refuses to drop it before), and the
// outside is still as it was.

// hostileNames are what a token holder names roles and databases, and
// members and owners, with: fresh names, the operator's own role, the
// privileged roles the test made, reserved and malformed names.
var hostileNames = []string{"r0", "r1", "r2", "plain", cluster.Superuser, "boss", "staff", "mover",
	"pg_execute_server_program", "pg_read_server_files", "pg_write_server_files", "pg_signal_backend", "pg_monitor",
	"postgres", "public", "Bad", `x"y`, "x;drop", "../x", ""}

// privilegedRoles are the roles the model's PostgreSQL holds that no Role
// may touch (besides the predefined pg_* roles).
var privilegedRoles = []string{cluster.Superuser, "boss", "staff", "mover"}

// existingDatabases are the databases the model's PostgreSQL holds, made
// by hand, unmarked, before any Database names them.
var existingDatabases = []string{"appdb", "victim"}

// existingState shows the existing databases with their comments: none
// may be dropped or marked.
const existingState = `SELECT string_agg(datname || ':' || COALESCE(shobj_description(oid, 'pg_database'), ''), ' ' ORDER BY datname)
	FROM pg_database WHERE datname IN ('appdb', 'victim')`

// privilegedState lists what no token holder may change: the attributes
// of the privileged roles and every membership in a privileged role.
const privilegedState = `SELECT string_agg(format('%s:%s%s%s%s%s%s', rolname, rolsuper, rolcanlogin, rolconnlimit, rolreplication, rolbypassrls, rolcreaterole), ' ' ORDER BY rolname)
	FROM pg_roles WHERE rolname IN ('converge', 'boss', 'staff', 'mover') OR rolname ~ '^pg_'
	UNION ALL SELECT COALESCE(string_agg(format('%s>%s', m.rolname, g.rolname), ' ' ORDER BY m.rolname, g.rolname), '')
	FROM pg_auth_members a JOIN pg_roles m ON m.oid = a.member JOIN pg_roles g ON g.oid = a.roleid
	WHERE g.rolname IN ('converge', 'boss', 'staff', 'mover') OR g.rolname ~ '^pg_'`

type pgModel struct {
	t        *testing.T
	e        *pgEnv
	rng      *rand.Rand
	cfg      DaemonConfig
	counts   reconcileCounts
	outside  string
	before   map[string]string
	priv     string
	forgedAt map[string]int64 // the revision of the last forged status, by key
	finished map[string]bool  // Backups whose forged status is finished
}

func TestATokenHolderWritingHostileSpecAndStatusChangesNothingOutsideWhatTheOperatorOwns(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("HOSTILE_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err)
		seed = n
	}
	t.Logf("HOSTILE_SEED=%d", seed)
	e := newPGEnv(t)
	m := &pgModel{t: t, e: e, rng: rand.New(rand.NewPCG(seed, 41)), cfg: e.daemonConfig(), outside: t.TempDir(),
		forgedAt: map[string]int64{}, finished: map[string]bool{}}
	e.query("postgres", "CREATE ROLE boss SUPERUSER NOLOGIN; CREATE ROLE staff NOLOGIN; GRANT pg_read_server_files TO staff;"+
		" CREATE ROLE mover REPLICATION NOLOGIN; CREATE ROLE plain NOLOGIN")
	e.query("postgres", "CREATE DATABASE appdb")
	e.query("postgres", "CREATE DATABASE victim")
	m.priv = e.query("postgres", privilegedState)
	precious := filepath.Join(m.outside, "precious")
	require.NoError(t, os.WriteFile(precious, []byte("keep me"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(m.outside, "victim.result"), []byte(`{"ok":true,"file":"`+precious+`"}`), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(m.outside, "victim.lock"), nil, 0o600))
	m.before = dirSnapshot(t, m.outside)
	m.cfg.Observe = m.counts.observe
	e.startInProcess(m.cfg)

	keys := m.writeAll()
	m.waitSettled(keys)
	m.check(keys)
	m.deleteAll(keys)
	m.checkOutside()
}

// writeAll writes random objects of every kind, then a random status
// over each, and returns their keys.
func (m *pgModel) writeAll() []string {
	t, s := m.t, m.e.stores
	var keys []string
	add := func(key string, v any, err error) {
		if errors.Is(err, apistore.ErrRejected) && m.rng.IntN(2) == 0 {
			err = m.storeBelow(key, v) // as a store without the kinds' rules holds it
		}
		if errors.Is(err, store.ErrInvalid) || errors.Is(err, store.ErrExists) {
			return // the store refuses the key, or it was drawn twice
		}
		require.NoError(t, err, key)
		keys = append(keys, key)
	}
	for range 10 {
		key, r := RolePrefix+m.name(), &Role{Spec: m.roleSpec()}
		_, err := s.Roles.Create(t.Context(), key, r)
		add(key, r, err)
	}
	for i := range 4 {
		key := DatabasePrefix + pick(m.rng, append([]string{fmt.Sprintf("d%d", i), "postgres", "template1", "Bad", ""}, existingDatabases...)...)
		spec := DatabaseSpec{
			Owner: pick(m.rng, hostileNames...), Reclaim: pick(m.rng, "", Retain, Delete, Reclaim("bogus")),
			Extensions: pick(m.rng, nil, []string{"pgcrypto"}, []string{"x'y"}, []string{"plpgsql"}),
		}
		if i == 0 { // an existing database, with a spec the operator accepts
			key, spec = DatabasePrefix+pick(m.rng, existingDatabases...), DatabaseSpec{Owner: pick(m.rng, "", "plain"), Reclaim: Delete}
		}
		d := &Database{Spec: spec}
		_, err := s.Databases.Create(t.Context(), key, d)
		add(key, d, err)
	}
	for i := range 2 {
		key := SchedulePrefix + pick(m.rng, fmt.Sprintf("s%d", i), "Bad", "../x")
		bs := &BackupSchedule{Spec: BackupScheduleSpec{
			Database: pick(m.rng, "appdb", "nosuch", "../x", ""), Schedule: pick(m.rng, "0 3 * * *", "@yearly", "bogus", ""),
			KeepSucceeded: pick(m.rng, -1, 0, 1, math.MaxInt), KeepFailed: pick(m.rng, -1, 0, 2),
		}}
		_, err := s.Schedules.Create(t.Context(), key, bs)
		add(key, bs, err)
	}
	for i := range 4 {
		b := &Backup{Spec: BackupSpec{Database: pick(m.rng, "appdb", "nosuch", "../x", "Bad", "")}}
		b.Finalizers = []string{BackupFinalizer}
		key := BackupPrefix + pick(m.rng, fmt.Sprintf("b%d", i), "../../x", "a/b")
		_, err := s.Backups.Create(t.Context(), key, b)
		add(key, b, err)
	}
	for _, key := range keys {
		m.forge(key)
	}
	return keys
}

// name is a role's name: a plain one as often as a hostile one.
func (m *pgModel) name() string {
	if m.rng.IntN(2) == 0 {
		return pick(m.rng, "r0", "r1", "r2", "r3", "plain")
	}
	return pick(m.rng, hostileNames...)
}

// roleSpec is a random Role spec.
func (m *pgModel) roleSpec() RoleSpec {
	spec := RoleSpec{Login: m.rng.IntN(2) == 0}
	if m.rng.IntN(3) > 0 {
		n := pick(m.rng, -2, -1, 0, 5, maxConnectionLimit, maxConnectionLimit+1, 1<<40, math.MinInt)
		spec.ConnectionLimit = &n
	}
	for range m.rng.IntN(3) {
		spec.InRoles = append(spec.InRoles, m.name())
	}
	return spec
}

// roleRefused says, from the contract, whether a Role is refused: a name
// that is not a plain identifier or is reserved or privileged, a limit
// out of range, a member of itself, of a reserved or privileged role.
func roleRefused(key string, spec RoleSpec) bool {
	name := strings.TrimPrefix(key, RolePrefix)
	bad := func(n string) bool {
		return !regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`).MatchString(n) || slices.Contains(privilegedRoles, n) ||
			n == "postgres" || n == "public" || n == "template0" || n == "template1" || strings.HasPrefix(n, "pg_")
	}
	if bad(name) || slices.Contains(spec.InRoles, name) || slices.ContainsFunc(spec.InRoles, bad) {
		return true
	}
	return spec.ConnectionLimit != nil && (*spec.ConnectionLimit < -1 || *spec.ConnectionLimit > math.MaxInt32)
}

// forge writes a random, hostile status over the object at key, with no
// Ready condition and no observed generation: what the operator writes
// next shows that it reconciled it.
func (m *pgModel) forge(key string) {
	t, s := m.t, m.e.stores
	rel, err := filepath.Rel(filepath.Join(m.e.dir, "backups", ".runs"), filepath.Join(m.outside, "victim"))
	require.NoError(t, err)
	str := func() string { return pick(m.rng, "", "\x1b[31m", rel, "../../x", "/etc/passwd") }
	var rev int64
	for range 50 {
		switch {
		case strings.HasPrefix(key, RolePrefix):
			rev, err = forgeStatus(t, s.Roles, key, RoleStatus{Exists: true, Login: true, ConnectionLimit: 1 << 40,
				InRoles: []string{"boss", "pg_execute_server_program"}, Created: true,
				External: external.Record{Name: str(), Creating: str(), Fingerprint: str()}})
		case strings.HasPrefix(key, DatabasePrefix):
			rev, err = forgeStatus(t, s.Databases, key, DatabaseStatus{Exists: true, Owner: "boss",
				Extensions: []string{"plpgsql", "pgcrypto"}, Created: true, External: external.Record{Name: str(), Creating: str()}})
		case strings.HasPrefix(key, SchedulePrefix):
			rev, err = forgeStatus(t, s.Schedules, key, BackupScheduleStatus{Running: str(), LastSucceeded: str(), Backups: -1, Error: str()})
		default:
			st := BackupStatus{Phase: pick(m.rng, "", BackupRunning, BackupSucceeded, BackupFailed), Error: str(),
				Dump: intent.Record[DumpResult]{ID: str(), Generation: pick(m.rng, int64(0), 1, 5), Attempt: pick(m.rng, 0, 1, -1),
					Done: m.rng.IntN(2) == 0, Result: DumpResult{OK: true, File: filepath.Join(m.outside, "precious")}}}
			m.finished[key] = st.Finished()
			rev, err = forgeStatus(t, s.Backups, key, st)
		}
		if !errors.Is(err, store.ErrConflict) {
			break
		}
	}
	require.NoError(t, err, key)
	m.forgedAt[key] = rev
}

// statusWriter is a store client that writes status, as convergectl does.
type statusWriter[T any] interface {
	UpdateStatus(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error)
}

// forgeStatus writes st as the status of key in s, clearing the observed
// generation and the conditions, and returns the revision written.
func forgeStatus[Spec, Status any](t *testing.T, s store.Store[*resource.Resource[Spec, Status]], key string, st Status) (int64, error) {
	obj, err := s.Get(t.Context(), key)
	if err != nil {
		return 0, err
	}
	v := *obj.Value
	v.Status, v.ObservedGeneration, v.Conditions = st, 0, nil
	written, err := s.(statusWriter[*resource.Resource[Spec, Status]]).UpdateStatus(t.Context(), key, &v, obj.Revision)
	return written.Revision, err
}

// waitReconciledSince waits until the operator has written the status of
// the object at key, for its generation, after the status forged at rev.
func waitReconciledSince[Spec, Status any](t *testing.T, s store.Store[*resource.Resource[Spec, Status]], key string, rev int64) {
	t.Helper()
	externaltest.WaitFor(t, s, key, convergeLimit, key+" reconciled since its forged status", func(objs map[string]store.Object[*resource.Resource[Spec, Status]]) bool {
		obj, found := objs[key]
		if !found {
			return false
		}
		_, ok := resource.FindCondition(obj.Value.Conditions, ConditionReady)
		return ok && obj.Revision > rev && obj.Value.ObservedGeneration == obj.Value.Generation
	})
}

// waitSettled waits until the operator has reconciled every object since
// its forged status (a Backup forged as finished is made once: it is left
// as it is), then past its drift source's first look.
func (m *pgModel) waitSettled(keys []string) {
	s := m.e.stores
	for _, key := range keys {
		rev := m.forgedAt[key]
		switch {
		case strings.HasPrefix(key, RolePrefix):
			waitReconciledSince(m.t, s.Roles, key, rev)
		case strings.HasPrefix(key, DatabasePrefix):
			waitReconciledSince(m.t, s.Databases, key, rev)
		case strings.HasPrefix(key, SchedulePrefix):
			waitReconciledSince(m.t, s.Schedules, key, rev)
		case !m.finished[key]:
			waitReconciledSince(m.t, s.Backups, key, rev)
		}
	}
	pause(m.t, m.cfg.DriftInterval+m.cfg.BackoffMax)
}

// check checks what the model guarantees once the operator has settled.
func (m *pgModel) check(keys []string) {
	t, s := m.t, m.e.stores
	m.checkOutside()
	refused := map[string]int{} // by "controller key": reconciles so far
	for _, key := range keys {
		if strings.HasPrefix(key, RolePrefix) {
			obj, err := s.Roles.Get(t.Context(), key)
			require.NoError(t, err)
			want := roleRefused(key, obj.Value.Spec)
			require.Equal(t, want, invalid(t, s.Roles, key), "%s %+v: refused as Invalid: %+v", key, obj.Value.Spec, obj.Value.Conditions)
			if want {
				refused["roles "+key] = m.counts.of("roles", key)
			}
			continue
		}
		for controller, inv := range map[string]bool{
			"databases": strings.HasPrefix(key, DatabasePrefix) && invalid(t, s.Databases, key),
			"schedules": strings.HasPrefix(key, SchedulePrefix) && invalid(t, s.Schedules, key),
			"backups":   strings.HasPrefix(key, BackupPrefix) && invalid(t, s.Backups, key),
		} {
			if inv {
				refused[controller+" "+key] = m.counts.of(controller, key)
			}
		}
	}
	pause(t, 3*m.cfg.BackoffMax)
	for ck, n := range refused {
		var controller, key string
		_, _ = fmt.Sscan(ck, &controller, &key)
		require.Equal(t, n, m.counts.of(controller, key), "%s was reconciled again after its refusal: a retry loop", ck)
	}
	t.Logf("%d objects, %d refused as Invalid", len(keys), len(refused))
}

// checkOutside checks what lies outside what the operator owns.
func (m *pgModel) checkOutside() {
	t := m.t
	require.Equal(t, m.priv, m.e.query("postgres", privilegedState), "a privileged role or membership changed")
	require.Equal(t, m.before, dirSnapshot(t, m.outside), "the directory beside the backups changed")
	require.Equal(t, "appdb: victim:", m.e.query("postgres", existingState), "a database that existed before was dropped or marked")
	backups := filepath.Join(m.e.dir, "backups")
	ours := regexp.MustCompile(`^(\.runs/\.?[A-Za-z0-9._~-]+\.(result|lock)[A-Za-z0-9.~-]*|\.runs/\.lock-[0-9]+|[a-z_][a-z0-9_]*/\.?[A-Za-z0-9._~-]+\.dump[A-Za-z0-9.~-]*)$`)
	for p := range dirSnapshot(t, backups) {
		rel, err := filepath.Rel(backups, p)
		require.NoError(t, err)
		require.Regexp(t, ours, rel, "a file in the backups' directory the operator does not name")
	}
	rows := m.e.query("postgres", "SELECT datname FROM pg_database WHERE datallowconn ORDER BY 1")
	for _, db := range regexp.MustCompile(`\S+`).FindAllString(rows, -1) {
		require.Equal(t, "1", m.e.query(db, "SELECT count(*) FROM pg_extension WHERE extname = 'plpgsql'"), "plpgsql dropped from %s", db)
	}
}

// deleteAll forges every status once more, then deletes every object, and
// waits until each is gone.
func (m *pgModel) deleteAll(keys []string) {
	t, s := m.t, m.e.stores
	for _, key := range keys {
		m.forge(key)
		var err error
		for range 50 {
			switch {
			case strings.HasPrefix(key, RolePrefix):
				err = deleteCurrent(t, s.Roles, key)
			case strings.HasPrefix(key, DatabasePrefix):
				err = deleteCurrent(t, s.Databases, key)
			case strings.HasPrefix(key, SchedulePrefix):
				err = deleteCurrent(t, s.Schedules, key)
			default:
				err = deleteCurrent(t, s.Backups, key)
			}
			if !errors.Is(err, store.ErrConflict) {
				break
			}
		}
		require.NoError(t, err, key)
	}
	gone := func(prefixes ...string) func(map[string]store.Object[json.RawMessage]) bool {
		return func(objs map[string]store.Object[json.RawMessage]) bool {
			for key := range objs {
				if slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(key, p) }) {
					return false
				}
			}
			return true
		}
	}
	externaltest.WaitFor(t, s.Raw, "", convergeLimit, "every object but the roles gone", gone(DatabasePrefix, SchedulePrefix, BackupPrefix))
	m.releaseRetained()
	externaltest.WaitFor(t, s.Raw, "", convergeLimit, "every object gone", gone(RolePrefix, DatabasePrefix, SchedulePrefix, BackupPrefix))
}
