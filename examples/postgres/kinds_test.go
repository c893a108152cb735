package main

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/apistore/schema"
	"github.com/stretchr/testify/require"
)

// TestTheStoreServerRefusesABadSpecNamingTheFieldBeforeAnyReconcile: the
// demo's store server admits by kinds.json, so a bad spec written by any
// client is refused with the field named and nothing is stored.
func TestTheStoreServerRefusesABadSpecNamingTheFieldBeforeAnyReconcile(t *testing.T) {
	srv, err := startStoreServer(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, srv.Close()) })
	stores, closeStores, err := srv.stores()
	require.NoError(t, err)
	t.Cleanup(func() { _ = closeStores() })
	ctx := t.Context()

	_, err = stores.Roles.Create(ctx, "roles/app", &Role{Spec: RoleSpec{ConnectionLimit: intp(-5)}})
	require.ErrorIs(t, err, apistore.ErrRejected)
	require.ErrorIs(t, err, store.ErrInvalid)
	require.ErrorContains(t, err, "spec.connectionLimit")
	_, err = stores.Databases.Create(ctx, "databases/app", &Database{Spec: DatabaseSpec{Reclaim: "keep"}})
	require.ErrorContains(t, err, "spec.reclaim")
	_, err = srv.mem.Get(ctx, "roles/app")
	require.ErrorIs(t, err, store.ErrNotFound, "nothing is stored")
	_, err = stores.Roles.Create(ctx, `roles/x"y`, &Role{Spec: RoleSpec{Login: true}})
	require.ErrorIs(t, err, apistore.ErrRejected, "a name that is no SQL identifier")
	require.ErrorContains(t, err, "name: want a match")
	_, err = srv.mem.Get(ctx, `roles/x"y`)
	require.ErrorIs(t, err, store.ErrNotFound, "nothing is stored")

	obj, err := stores.Roles.Create(ctx, "roles/app", &Role{Spec: RoleSpec{Login: true, ConnectionLimit: intp(-1)}})
	require.NoError(t, err)
	bad := *obj.Value
	bad.Spec.InRoles = []string{"Admins"}
	_, err = stores.Roles.Update(ctx, "roles/app", &bad, obj.Revision)
	require.ErrorContains(t, err, "spec.inRoles[0]")
	got, err := stores.Roles.Get(ctx, "roles/app")
	require.NoError(t, err)
	require.Equal(t, obj.Revision, got.Revision, "a refused update writes nothing")
}

// TestTheKindRulesRefuseWhatTheOperatorsChecksRefuse: for every spec and
// name of the table, kinds.json refuses it exactly when the operator's own
// check does (for what a schema can say: not which names are reserved), so
// the rules written once agree with the reconciler's.
func TestTheKindRulesRefuseWhatTheOperatorsChecksRefuse(t *testing.T) {
	r, err := schema.Parse(kindRules)
	require.NoError(t, err)
	judge := func(prefix string, spec any) error {
		raw, err := json.Marshal(map[string]any{"spec": spec})
		require.NoError(t, err)
		for _, k := range r.Kinds {
			if k.Prefix == prefix {
				return k.Admission().Validate(raw)
			}
		}
		t.Fatalf("no rules for %s", prefix)
		return nil
	}
	judgeName := func(prefix, name string) error {
		for _, k := range r.Kinds {
			if k.Prefix == prefix {
				return k.Admission().ValidateKey(prefix + name)
			}
		}
		t.Fatalf("no rules for %s", prefix)
		return nil
	}
	roles := []RoleSpec{{}, {Login: true}, {ConnectionLimit: intp(-1)}, {ConnectionLimit: intp(-2)}, {ConnectionLimit: intp(7)}, {ConnectionLimit: intp(1 << 31)}, {ConnectionLimit: intp(1<<31 - 1)},
		{InRoles: []string{"admins", "readers"}}, {InRoles: []string{"Admins"}}, {InRoles: []string{"x'y"}}, {InRoles: []string{""}}}
	for _, spec := range roles {
		require.Equal(t, validateRole("app", "operator", spec) == nil, judge(RolePrefix, spec) == nil, "%+v", spec)
	}
	databases := []DatabaseSpec{{}, {Owner: "app"}, {Owner: "App"}, {Reclaim: Retain}, {Reclaim: Delete}, {Reclaim: "keep"},
		{Extensions: []string{"uuid-ossp", "pgcrypto"}}, {Extensions: []string{"x'y"}}, {Extensions: []string{""}}}
	for _, spec := range databases {
		require.Equal(t, spec.validate() == nil, judge(DatabasePrefix, spec) == nil, "%+v", spec)
	}
	for _, spec := range []BackupScheduleSpec{{Database: "app", Schedule: "@daily"}, {Database: "App", Schedule: "@daily"},
		{Database: "app", Schedule: "@daily", KeepFailed: -1}, {Database: "app", Schedule: "@daily", KeepSucceeded: -1},
		{Database: "app", Schedule: "@daily", Method: MethodBase, RecoveryWindow: "168h"}, {Database: "app", Schedule: "@daily", Method: "tar"}} {
		_, _, checkErr := parseSchedule(SchedulePrefix+"nightly", spec)
		require.Equal(t, checkErr == nil, judge(SchedulePrefix, spec) == nil, "%+v", spec)
	}
	for _, spec := range []BackupSpec{{Database: "app"}, {Database: "App"}, {Database: ""}, {Database: "app", Method: MethodBase},
		{Database: "app", Method: MethodDump}, {Database: "app", Method: "tar"}} {
		_, methodErr := spec.method()
		require.Equal(t, checkNames("database", spec.Database) == nil && methodErr == nil, judge(BackupPrefix, spec) == nil, "%+v", spec)
	}
	for _, prefix := range []string{RolePrefix, DatabasePrefix, SchedulePrefix, RestorePrefix} {
		for _, name := range []string{"app", "_x9", "App", "", "x;drop", `x"y`, "../x", "a/b", strings.Repeat("a", 63), strings.Repeat("a", 64), "pg_monitor", "postgres"} {
			_, checkErr := nameOf(prefix, prefix+name)
			// A schema cannot say which names are reserved: the
			// operator's check refuses those alone.
			require.Equal(t, checkErr == nil || reserved(name), judgeName(prefix, name) == nil, "%s%s", prefix, name)
		}
	}
	require.NoError(t, judge(RestorePrefix, RestoreSpec{Backup: BackupPrefix + "b"}))
	require.NoError(t, judge(RestorePrefix, RestoreSpec{Time: time.Date(2026, 12, 7, 14, 30, 0, 0, time.UTC)}))
	require.Error(t, judge(RestorePrefix, map[string]any{"path": "/etc"}), "a Restore takes no path")
	var fe *apistore.FieldError
	require.True(t, errors.As(judge(RolePrefix, map[string]any{"conectionLimit": 1}), &fe), "a misspelt field is refused")
	require.Equal(t, "spec.conectionLimit", fe.Field)
}
