package main

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// dbTrial is one crash trial of the Database kind: a store of its own
// (with the API-server layer and an identity of its own), a key of its
// own, the operator's own directory, and the real PostgreSQL of the test.
type dbTrial struct {
	pg  *pg
	s   store.Store[*Database]
	key string
	dir string
}

// newDBTrials returns a maker of trials on e's PostgreSQL, each with a
// database name of its own.
func newDBTrials(t *testing.T, e *pgEnv) func(t *testing.T) *dbTrial {
	p := trialPG(t, e)
	n := 0
	return func(t *testing.T) *dbTrial {
		n++
		s, err := apistore.New(store.NewMemory[*Database](), resource.Kind[DatabaseSpec, DatabaseStatus]{})
		require.NoError(t, err)
		return &dbTrial{pg: p, s: s, key: fmt.Sprintf("%scrash_%d", DatabasePrefix, n), dir: t.TempDir()}
	}
}

func (r *dbTrial) world() *dbWorld {
	return &dbWorld{pg: r.pg, marks: &marks{store: identifierOf(r.s)}}
}

// settle runs the Database kind's kit, as a process just started, on the
// trial's key until it settles, its steps through f: each call of the
// World, the mark CREATE DATABASE leaves apart, each write of the store.
func (r *dbTrial) settle(t *testing.T, f *externaltest.Faults) error {
	w := r.world()
	w.step = f.Do
	fs := externaltest.Store[*Database]{Store: r.s, F: f}
	kit, err := external.New(fs, externaltest.WithFaults(f, w.world()), databaseOptions(r.dir))
	require.NoError(t, err)
	return externaltest.Settle(t.Context(), kit, fs, r.key, 20)
}

func (r *dbTrial) mustSettle(t *testing.T) {
	t.Helper()
	require.NoError(t, r.settle(t, &externaltest.Faults{}), "settled without faults, no person asked")
}

// marked returns the databases marked for the trial's key from its store.
func (r *dbTrial) marked(t *testing.T) []string {
	w := r.world()
	listed, err := w.list(t.Context())
	require.NoError(t, err)
	var out []string
	for _, l := range listed {
		if ours, err := w.ours(t.Context(), r.key, l.Mark); err == nil && ours {
			out = append(out, l.Name)
		}
	}
	return out
}

// A crash at every step of a Database's create — before or after each
// call of PostgreSQL (CREATE DATABASE and its mark apart) and each write
// of the store — then a restart, leaves exactly one database, marked for
// its key, named in status, and Ready, without a person; a crash at every
// step of its deletion leaves neither the database nor the Database. The
// kit's crash clauses (externaltest.EveryCrash), against a real
// PostgreSQL, with the operator's own record of its creates.
func TestACrashAtEveryStepOfADatabasesCreateOrDeleteLeavesOneDatabaseOrNone(t *testing.T) {
	e := newPGEnv(t)
	trial := newDBTrials(t, e)
	spec := DatabaseSpec{Reclaim: Delete}
	count := func(name string) string {
		return e.query("postgres", "SELECT count(*) FROM pg_database WHERE datname = '"+name+"'")
	}
	t.Run("create", func(t *testing.T) {
		externaltest.EveryCrash(t, func(t *testing.T, f *externaltest.Faults) (func(*testing.T), error) {
			r := trial(t)
			put(t, r.s, r.key, spec)
			err := r.settle(t, f)
			return func(t *testing.T) {
				r.mustSettle(t)
				name := r.key[len(DatabasePrefix):]
				require.Equal(t, []string{name}, r.marked(t), "one database, marked for its key")
				require.Equal(t, "1", count(name))
				obj, err := r.s.Get(t.Context(), r.key)
				require.NoError(t, err)
				require.Equal(t, external.Record{Name: name, Fingerprint: databaseFingerprint(r.pg.user)}, obj.Value.Status.External)
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
				require.Empty(t, r.marked(t), "a database left")
				require.Equal(t, "0", count(r.key[len(DatabasePrefix):]))
				_, err := r.s.Get(t.Context(), r.key)
				require.True(t, errors.Is(err, store.ErrNotFound), "the Database is left: %v", err)
			}, err
		})
	})
}
