package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/converge-go/converge/examples/internal/procs"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
)

// This file holds the demo's story, one step per function, each checking
// what it tells: the objects applied and altered, drift made with psql
// and healed, backups, PostgreSQL stopped and back, a fresh store that
// drops nothing, and deletions made while the operator is down.

// stepLimit bounds each wait of the story: generous, since it says when to
// give up, not how fast the operator is.
const stepLimit = time.Minute

// putSpec writes spec at key, as "convergectl apply" would, and tells so.
func putSpec[Spec, Status any](ctx context.Context, s *story, st store.Store[*resource.Resource[Spec, Status]], key string, spec Spec) error {
	b, _ := json.Marshal(map[string]any{"spec": spec})
	s.say.Say("apply %s %s", key, b)
	_, err := resource.PutSpec(ctx, st, key, spec)
	return err
}

// converge waits until every key of st is Ready for its latest generation.
func converge[Spec, Status any](ctx context.Context, st store.Store[*resource.Resource[Spec, Status]], keys ...string) error {
	for _, key := range keys {
		err := until(ctx, stepLimit, key+" converged", func() (bool, error) {
			obj, err := st.Get(ctx, key)
			if err != nil {
				return false, nil
			}
			c, ok := resource.FindCondition(obj.Value.Conditions, ConditionReady)
			return ok && c.Status == resource.ConditionTrue && obj.Value.ObservedGeneration == obj.Value.Generation, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// psql runs sql in db and returns its output on one line.
func (s *story) psql(ctx context.Context, db, sql string) (string, error) {
	out, err := s.pg.Psql(ctx, db, sql)
	return strings.Join(strings.Fields(strings.TrimSpace(out)), " "), err
}

// catalog tells what psql shows of the roles and databases.
func (s *story) catalog(ctx context.Context) error {
	roles, err := s.psql(ctx, "postgres", `SELECT string_agg(rolname || '(login=' || rolcanlogin || ' limit=' || rolconnlimit || ')', ' ' ORDER BY rolname)
		FROM pg_roles WHERE rolname IN ('app', 'readers')`)
	if err != nil {
		return err
	}
	dbs, err := s.psql(ctx, "postgres", `SELECT string_agg(datname || '(owner=' || pg_get_userbyid(datdba) || ')', ' ' ORDER BY datname)
		FROM pg_database WHERE datname IN ('appdb', 'archive')`)
	if err != nil {
		return err
	}
	s.say.Say("psql: roles %s; databases %s", roles, dbs)
	return nil
}

func (s *story) apply(ctx context.Context) error {
	s.say.Say("— apply: two roles and two databases")
	if err := errors.Join(
		putSpec(ctx, s, s.stores.Roles, "roles/readers", RoleSpec{}),
		putSpec(ctx, s, s.stores.Roles, "roles/app", RoleSpec{Login: true, ConnectionLimit: intPtr(5), InRoles: []string{"readers"}}),
		putSpec(ctx, s, s.stores.Databases, "databases/appdb", DatabaseSpec{Owner: "app", Extensions: []string{"pgcrypto"}, Reclaim: Delete}),
		putSpec(ctx, s, s.stores.Databases, "databases/archive", DatabaseSpec{Owner: "readers", Reclaim: Retain}),
	); err != nil {
		return err
	}
	if err := errors.Join(converge(ctx, s.stores.Roles, "roles/readers", "roles/app"),
		converge(ctx, s.stores.Databases, "databases/appdb", "databases/archive")); err != nil {
		return err
	}
	obj, err := s.stores.Databases.Get(ctx, "databases/appdb")
	if err != nil {
		return err
	}
	s.say.Say("databases/appdb: Ready, generation %d observed, extensions %v, created by the operator: %v",
		obj.Value.ObservedGeneration, obj.Value.Status.Extensions, obj.Value.Status.Created)
	mark, err := s.psql(ctx, "postgres", "SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = 'appdb'")
	s.say.Say("psql: appdb's comment is the operator's mark: %s", mark)
	return errors.Join(err, s.catalog(ctx))
}

func (s *story) alter(ctx context.Context) error {
	s.say.Say("— alter: app may hold 10 connections")
	if err := putSpec(ctx, s, s.stores.Roles, "roles/app", RoleSpec{Login: true, ConnectionLimit: intPtr(10), InRoles: []string{"readers"}}); err != nil {
		return err
	}
	if err := converge(ctx, s.stores.Roles, "roles/app"); err != nil {
		return err
	}
	return s.catalog(ctx)
}

func (s *story) drift(ctx context.Context) error {
	s.say.Say("— drift: changes made with psql, behind the operator's back")
	for _, change := range []struct{ sql, want, check string }{
		{"ALTER ROLE app CONNECTION LIMIT 1", "10", "SELECT rolconnlimit FROM pg_roles WHERE rolname = 'app'"},
		{"DROP DATABASE appdb WITH (FORCE)", "1", "SELECT count(*) FROM pg_database WHERE datname = 'appdb'"},
	} {
		if _, err := s.psql(ctx, "postgres", change.sql); err != nil {
			return err
		}
		start := time.Now()
		s.say.Say("psql: %s", change.sql)
		err := until(ctx, stepLimit, "drift healed", func() (bool, error) {
			got, err := s.psql(ctx, "postgres", change.check)
			return got == change.want, err
		})
		if err != nil {
			return err
		}
		s.say.Say("put back by the drift source's next poll, %v later", time.Since(start).Round(10*time.Millisecond))
	}
	return nil
}

func (s *story) backups(ctx context.Context) error {
	s.say.Say("— backups: a schedule, and one made by hand")
	if _, err := s.psql(ctx, "appdb", "CREATE TABLE orders AS SELECT g AS id, md5(g::text) AS ref FROM generate_series(1, 20000) g"); err != nil {
		return err
	}
	if err := putSpec(ctx, s, s.stores.Schedules, "backupschedules/appdb", BackupScheduleSpec{Database: "appdb", Schedule: "0 3 * * *", KeepSucceeded: 7}); err != nil {
		return err
	}
	var first string
	err := until(ctx, stepLimit, "the schedule's first backup", func() (bool, error) {
		obj, err := s.stores.Schedules.Get(ctx, "backupschedules/appdb")
		first = obj.Value.Status.LastSucceeded
		return err == nil && first != "", nil
	})
	if err != nil {
		return err
	}
	s.say.Say("a new schedule backs up its latest slot at once: %s", first)
	if err := putSpec(ctx, s, s.stores.Backups, "backups/before-upgrade", BackupSpec{Database: "appdb"}); err != nil {
		return err
	}
	if err := converge(ctx, s.stores.Backups, "backups/before-upgrade"); err != nil {
		return err
	}
	for _, key := range []string{first, "backups/before-upgrade"} {
		obj, err := s.stores.Backups.Get(ctx, key)
		if err != nil {
			return err
		}
		r := obj.Value.Status.Dump.Result
		s.say.Say("%s: %s, %s, %d bytes, %d entries (pg_restore --list), attempt %s",
			key, obj.Value.Status.Phase, filepath.Base(r.File), r.Bytes, r.Entries, obj.Value.Status.Dump.ID)
	}
	return nil
}

func (s *story) outage(ctx context.Context) error {
	s.say.Say("— outage: PostgreSQL stops for a while")
	if err := s.pg.Stop(); err != nil {
		return err
	}
	s.say.Say("PostgreSQL stopped")
	var body string
	err := until(ctx, stepLimit, "/readyz naming PostgreSQL as down", func() (bool, error) {
		code, b := procs.Get(ctx, s.op.base+"/readyz")
		body = b
		return code == http.StatusServiceUnavailable && strings.Contains(b, "dependency: down: "+DependencyName), nil
	})
	if err != nil {
		return err
	}
	s.say.Say("/readyz: 503 %s", firstLine(body, "dependency: down: "+DependencyName))
	// Each controller checks PostgreSQL on its own: the roles controller
	// may find it down a check after the one /readyz named.
	state := ""
	err = until(ctx, stepLimit, "the debug page naming PostgreSQL as down for the roles controller", func() (bool, error) {
		_, page := procs.Get(ctx, s.op.base+DebugPath+"?format=json")
		state = dependencyState(page, "roles")
		return state == "down", nil
	})
	if err != nil {
		return err
	}
	s.say.Say("debug page: postgres %s for the roles controller", state)
	if err := s.pg.Start(ctx); err != nil {
		return err
	}
	s.say.Say("PostgreSQL started again")
	if err := until(ctx, stepLimit, "the operator ready again", func() (bool, error) {
		return procs.Probe(ctx, s.op.base+"/readyz") == http.StatusOK, nil
	}); err != nil {
		return err
	}
	s.say.Say("/readyz: 200 ok; the held keys are retried at once")
	return nil
}

// firstLine returns the first line of body that holds sub.
func firstLine(body, sub string) string {
	for _, l := range strings.Split(body, "\n") {
		if strings.Contains(l, sub) {
			return strings.TrimSpace(l)
		}
	}
	return strings.TrimSpace(body)
}

// intPtr returns a pointer to n.
func intPtr(n int) *int { return &n }

// errStory marks a step whose outcome is not what the story tells.
var errStory = errors.New("postgres demo: unexpected outcome")

func storyErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", errStory, fmt.Sprintf(format, args...))
}
