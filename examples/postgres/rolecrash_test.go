package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// roleTrial is one crash trial of the Role kind: a store of its own
// (with the API-server layer and an identity of its own), a key of its
// own, and the real PostgreSQL of the test.
type roleTrial struct {
	pg  *pg
	s   store.Store[*Role]
	key string
}

// trialPG returns a connection pool of the crash trials to e's
// PostgreSQL, closed when t ends.
func trialPG(t *testing.T, e *pgEnv) *pg {
	cfg, err := pgxpool.ParseConfig(e.pg.DSN("postgres"))
	require.NoError(t, err)
	p, err := newPG(cfg)
	require.NoError(t, err)
	t.Cleanup(p.Close)
	return p
}

// newRoleTrials returns a maker of trials on e's PostgreSQL, each with a
// role name of its own.
func newRoleTrials(t *testing.T, e *pgEnv) func(t *testing.T) *roleTrial {
	p := trialPG(t, e)
	n := 0
	return func(t *testing.T) *roleTrial {
		n++
		s, err := apistore.New(store.NewMemory[*Role](), resource.Kind[RoleSpec, RoleStatus]{})
		require.NoError(t, err)
		return &roleTrial{pg: p, s: s, key: fmt.Sprintf("%scrash_%d", RolePrefix, n)}
	}
}

// settle runs the Role kind's kit, as a process just started, on the
// trial's key until it settles, its steps through f.
func (r *roleTrial) settle(t *testing.T, f *externaltest.Faults) error {
	w := &roleWorld{pg: r.pg, marks: &marks{store: identifierOf(r.s)}}
	fs := externaltest.Store[*Role]{Store: r.s, F: f}
	kit, err := external.New(fs, externaltest.WithFaults(f, w.world()), roleOptions())
	require.NoError(t, err)
	return externaltest.Settle(t.Context(), kit, fs, r.key, 20)
}

func (r *roleTrial) mustSettle(t *testing.T) {
	t.Helper()
	require.NoError(t, r.settle(t, &externaltest.Faults{}), "settled without faults, no person asked")
}

// marked returns the roles marked for the trial's key from its store.
func (r *roleTrial) marked(t *testing.T) []string {
	w := &roleWorld{pg: r.pg, marks: &marks{store: identifierOf(r.s)}}
	listed, err := w.list(t.Context())
	require.NoError(t, err)
	mine, err := w.marks.mark(t.Context(), RoleOwner)
	require.NoError(t, err)
	var out []string
	for _, l := range listed {
		if l.Mark.Mark == mine && l.Mark.Key == r.key {
			out = append(out, l.Name)
		}
	}
	return out
}

// A crash at every step of a Role's create — before or after each query
// of PostgreSQL and each write of the store — then a restart, leaves
// exactly one role, marked for its key, as its spec says, named in
// status, and Ready, without a person; a crash at every step of its
// deletion leaves neither the role nor the Role. The kit's crash clauses
// (externaltest.EveryCrash), against a real PostgreSQL.
func TestACrashAtEveryStepOfARolesCreateOrDeleteLeavesOneRoleOrNone(t *testing.T) {
	e := newPGEnv(t)
	trial := newRoleTrials(t, e)
	spec := RoleSpec{Login: true, ConnectionLimit: intp(3)}
	t.Run("create", func(t *testing.T) {
		externaltest.EveryCrash(t, func(t *testing.T, f *externaltest.Faults) (func(*testing.T), error) {
			r := trial(t)
			put(t, r.s, r.key, spec)
			err := r.settle(t, f)
			return func(t *testing.T) {
				r.mustSettle(t)
				name := roleName(r.key, spec)
				require.Equal(t, []string{name}, r.marked(t), "one role, marked for its key")
				require.Equal(t, "t|3|", e.query("postgres", roleRow(name)))
				obj, err := r.s.Get(t.Context(), r.key)
				require.NoError(t, err)
				require.Equal(t, external.Record{Name: name, Fingerprint: listedFingerprint(t, e, name)}, obj.Value.Status.External)
				require.True(t, obj.Value.Status.Created)
				ready, _ := resource.FindCondition(obj.Value.Conditions, ConditionReady)
				require.Equal(t, resource.ConditionTrue, ready.Status, "%+v", ready)
			}, err
		})
	})
	t.Run("delete", func(t *testing.T) {
		externaltest.EveryCrash(t, func(t *testing.T, f *externaltest.Faults) (func(*testing.T), error) {
			r := trial(t)
			put(t, r.s, r.key, spec)
			r.mustSettle(t)
			externaltest.Delete(t, r.s, r.key)
			err := r.settle(t, f)
			return func(t *testing.T) {
				r.mustSettle(t)
				require.Empty(t, r.marked(t), "a role left")
				require.Equal(t, "0", e.query("postgres", "SELECT count(*) FROM pg_roles WHERE rolname = '"+roleName(r.key, spec)+"'"))
				_, err := r.s.Get(t.Context(), r.key)
				require.True(t, errors.Is(err, store.ErrNotFound), "the Role is left: %v", err)
			}, err
		})
	})
}
