package main

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/examples/postgres/internal/cluster"
	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// reconcileCounts counts the reconciles of each controller's keys
// (DaemonConfig.Observe).
type reconcileCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *reconcileCounts) observe(controller, key string, _ time.Time, _ error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[controller+" "+key]++
}

// of returns the reconciles of key by controller so far.
func (c *reconcileCounts) of(controller, key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[controller+" "+key]
}

// invalid reports whether the object at key is refused for its latest
// generation: Ready False with reason Invalid (external.ReasonRejected
// for a kind reconcile/kit/external reconciles).
func invalid[Spec, Status any](t *testing.T, s store.Store[*resource.Resource[Spec, Status]], key string) bool {
	obj, err := s.Get(t.Context(), key)
	return err == nil && refused(obj.Value)
}

// refused reports whether r is refused for its latest generation, as
// invalid says.
func refused[Spec, Status any](r *resource.Resource[Spec, Status]) bool {
	c, ok := resource.FindCondition(r.Conditions, ConditionReady)
	rejected := c.Reason == "Invalid" || c.Reason == external.ReasonRejected // the external kit's word
	return ok && c.Status == resource.ConditionFalse && rejected && r.ObservedGeneration == r.Generation
}

// requireTerminal waits until each key of controller is refused as
// Invalid, then checks that it is not reconciled again over a few of the
// longest backoffs once the drift source has had its first look (which
// wakes each key it sees once): a refusal is terminal, not a retry loop.
func requireTerminal[Spec, Status any](t *testing.T, s store.Store[*resource.Resource[Spec, Status]], counts *reconcileCounts, controller string, cfg DaemonConfig, keys ...string) {
	t.Helper()
	for _, k := range keys {
		externaltest.WaitFor(t, s, k, convergeLimit, k+" refused as Invalid", func(objs map[string]store.Object[*resource.Resource[Spec, Status]]) bool {
			obj, ok := objs[k]
			return ok && refused(obj.Value)
		})
	}
	pause(t, cfg.DriftInterval+cfg.BackoffMax)
	before := make([]int, len(keys))
	for i, k := range keys {
		before[i] = counts.of(controller, k)
	}
	pause(t, 3*cfg.BackoffMax)
	for i, k := range keys {
		require.Equal(t, before[i], counts.of(controller, k), "%s was reconciled again after its refusal: a retry loop", k)
		require.True(t, invalid(t, s, k), "%s is no longer Invalid", k)
	}
}

// pause lets the operator run for d (or until the test ends).
func pause(t *testing.T, d time.Duration) {
	select {
	case <-time.After(d):
	case <-t.Context().Done():
	}
}

// A Role naming the role the operator logs in as is refused as Invalid,
// terminally: the operator never alters its own role (a NOLOGIN there
// would fail every new connection while pooled ones hid it).
func TestARoleNamingTheOperatorsOwnRoleIsRefusedAndNeverAltered(t *testing.T) {
	e := newPGEnv(t)
	var counts reconcileCounts
	cfg := e.daemonConfig()
	cfg.Observe = counts.observe
	e.startInProcess(cfg)
	put(t, e.stores.Roles, RolePrefix+cluster.Superuser, RoleSpec{Login: false, ConnectionLimit: intp(1)})
	requireTerminal(t, e.stores.Roles, &counts, "roles", cfg, RolePrefix+cluster.Superuser)
	require.Equal(t, "t|-1|", e.query("postgres", roleRow(cluster.Superuser)), "the operator's own role was altered")
}

// A membership in a privileged role — a predefined role such as
// pg_execute_server_program, a superuser, a role holding one of those, the
// operator's own role — is refused as Invalid, terminally, and never
// granted; so is a Role naming a privileged role.
func TestAMembershipInAPrivilegedRoleIsRefusedAndNeverGranted(t *testing.T) {
	e := newPGEnv(t)
	var counts reconcileCounts
	cfg := e.daemonConfig()
	cfg.Observe = counts.observe
	e.startInProcess(cfg)
	e.query("postgres", "CREATE ROLE boss SUPERUSER NOLOGIN; CREATE ROLE staff NOLOGIN; GRANT pg_read_server_files TO staff;"+
		" CREATE ROLE mover REPLICATION NOLOGIN; CREATE ROLE plain NOLOGIN")
	cases := map[string]RoleSpec{
		"roles/a_exec":  {InRoles: []string{"pg_execute_server_program"}},
		"roles/a_boss":  {InRoles: []string{"boss"}},
		"roles/a_staff": {InRoles: []string{"plain", "staff"}},
		"roles/a_self":  {InRoles: []string{cluster.Superuser}},
		"roles/a_mover": {InRoles: []string{"mover"}},
		"roles/boss":    {Login: true},
		"roles/staff":   {},
	}
	var keys []string
	for key, spec := range cases {
		put(t, e.stores.Roles, key, spec)
		keys = append(keys, key)
	}
	put(t, e.stores.Roles, "roles/a_plain", RoleSpec{InRoles: []string{"plain"}})
	externaltest.WaitConverged(t, e.stores.Roles, convergeLimit, "roles/a_plain")
	requireTerminal(t, e.stores.Roles, &counts, "roles", cfg, keys...)
	require.Equal(t, "0", e.query("postgres", `SELECT count(*) FROM pg_auth_members m JOIN pg_roles r ON r.oid = m.member
		WHERE r.rolname LIKE 'a\_%' AND r.rolname <> 'a_plain'`), "a privileged membership was granted")
	require.Equal(t, "f|-1|pg_read_server_files", e.query("postgres", roleRow("staff")), "a privileged role was altered")
	require.Equal(t, "f|-1|", e.query("postgres", roleRow("boss")), "a superuser role was altered")
}

// A connection limit PostgreSQL cannot hold (beyond an int4) is refused as
// Invalid, terminally, instead of a syntax error retried forever.
func TestAConnectionLimitPostgreSQLCannotHoldIsRefusedNotRetried(t *testing.T) {
	require.ErrorIs(t, validateRole("app", "operator", RoleSpec{ConnectionLimit: intp(maxConnectionLimit + 1)}), ErrInvalidSpec)
	require.NoError(t, validateRole("app", "operator", RoleSpec{ConnectionLimit: intp(maxConnectionLimit)}))
	e := newPGEnv(t)
	var counts reconcileCounts
	cfg := e.daemonConfig()
	cfg.Observe = counts.observe
	e.startInProcess(cfg)
	// The kind's rule refuses it at the door, naming the field...
	_, err := resource.PutSpec(t.Context(), e.stores.Roles, "roles/huge", RoleSpec{ConnectionLimit: intp(1 << 40)})
	require.ErrorIs(t, err, apistore.ErrRejected)
	require.ErrorContains(t, err, "spec.connectionLimit")
	// ...and one stored before the rule (below the layer) reaches the
	// operator, which refuses it where it is used.
	_, err = e.store.mem.Create(t.Context(), "roles/huge", json.RawMessage(`{"metadata":{"generation":1},"spec":{"connectionLimit":1099511627776}}`))
	require.NoError(t, err)
	requireTerminal(t, e.stores.Roles, &counts, "roles", cfg, "roles/huge")
	require.Equal(t, "0", e.query("postgres", "SELECT count(*) FROM pg_roles WHERE rolname = 'huge'"))
}
