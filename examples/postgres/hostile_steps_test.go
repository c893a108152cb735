package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/postgres/internal/cluster"
	"github.com/converge-go/converge/store"
)

// The steps of the hostile-state model (hostile_model_test.go) that act
// on the world and the store as others would: a store without the kinds'
// rules, a DBA, a user deleting.

// storeBelow writes v at key in the store below the layer, as created
// (generation 1), past the kinds' rules: as a store server without them
// (convergestore without -kinds), or written before them, holds it. The
// operator's own checks must refuse what the rules would have.
func (m *pgModel) storeBelow(key string, v any) error {
	raw, err := json.Marshal(v)
	require.NoError(m.t, err)
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // exact integers, math.MinInt included
	require.NoError(m.t, dec.Decode(&obj))
	md, _ := obj["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
	}
	md["generation"] = 1
	obj["metadata"] = md
	raw, err = json.Marshal(obj)
	require.NoError(m.t, err)
	_, err = m.e.store.mem.Create(m.t.Context(), key, raw)
	return err
}

// releaseRetained does what a DBA does for a deleted Role whose role owns
// what its Databases retained (or a database that existed before):
// PostgreSQL refuses to drop a role that owns objects, and the operator
// retries the deletion until they go or change owner. Every object of
// such a role is given to the superuser, in every database.
func (m *pgModel) releaseRetained() {
	t := m.t
	objs, _, err := m.e.stores.Roles.List(t.Context(), RolePrefix)
	require.NoError(t, err)
	dbs := regexp.MustCompile(`\S+`).FindAllString(m.e.query("postgres", "SELECT datname FROM pg_database WHERE datallowconn ORDER BY 1"), -1)
	for _, obj := range objs {
		name := strings.TrimPrefix(obj.Key, RolePrefix)
		if reserved(name) || slices.Contains(privilegedRoles, name) ||
			m.e.query("postgres", "SELECT count(*) FROM pg_roles WHERE rolname = "+literal(name)) == "0" {
			continue // never the operator's to drop, or gone
		}
		for _, db := range dbs {
			_, err := m.e.pg.Psql(t.Context(), db, "REASSIGN OWNED BY "+ident(name)+" TO "+ident(cluster.Superuser))
			if err != nil && m.e.query("postgres", "SELECT count(*) FROM pg_roles WHERE rolname = "+literal(name)) == "0" {
				break // the operator dropped it meanwhile
			}
			require.NoError(t, err)
		}
	}
}

// deleteCurrent deletes key at its current revision; gone already is done.
func deleteCurrent[T any](t *testing.T, s store.Store[T], key string) error {
	obj, err := s.Get(t.Context(), key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = s.Delete(t.Context(), key, obj.Revision)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return err
}

// pick returns one of vs at random.
func pick[T any](rng *rand.Rand, vs ...T) T { return vs[rng.IntN(len(vs))] }

// dirSnapshot returns the files under dir with their contents (none if
// dir does not exist).
func dirSnapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		files[p] = string(b)
		return err
	})
	if errors.Is(err, os.ErrNotExist) {
		return files
	}
	require.NoError(t, err)
	return files
}
