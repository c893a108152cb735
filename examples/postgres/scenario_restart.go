package main

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"time"

	"github.com/converge-go/converge/store"
)

// This file holds the story's steps that stop the operator: a fresh store
// that drops nothing, and deletions made while the operator is down.

func (s *story) freshStore(ctx context.Context) error {
	s.say.Say("— a fresh store: the operator on a new, empty store, against the same PostgreSQL")
	if err := s.op.Stop(time.Minute); err != nil {
		return err
	}
	s.op = nil
	s.say.Say("operator stopped")
	dir := filepath.Join(s.cfg.Dir, "fresh")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fresh, err := startStoreServer(dir)
	if err != nil {
		return err
	}
	defer fresh.Close()
	if err := s.startOperator(ctx, fresh); err != nil {
		return err
	}
	// Its pruners pass after its first sync and then every 2s: let a few
	// passes go by.
	time.Sleep(5 * time.Second)
	n, err := s.psql(ctx, "postgres", "SELECT count(*) FROM pg_database WHERE datname IN ('appdb', 'archive')")
	if err != nil {
		return err
	}
	if n != "2" {
		return storyErr("%s of the 2 databases left after the operator ran on a fresh store", n)
	}
	s.say.Say("psql: appdb and archive are still there: their marks name another store, and an empty store prunes nothing")
	if err := s.op.Stop(time.Minute); err != nil {
		return err
	}
	s.op = nil
	if err := fresh.Close(); err != nil {
		return err
	}
	return s.startOperator(ctx, s.store)
}

func (s *story) deleteWhileDown(ctx context.Context) error {
	s.say.Say("— delete while the operator is down")
	if err := s.op.Stop(time.Minute); err != nil {
		return err
	}
	s.op = nil
	s.say.Say("operator stopped")
	for _, key := range []string{"databases/appdb", "databases/archive", "roles/app"} {
		obj, err := s.stores.Raw.Get(ctx, key)
		if err != nil {
			return err
		}
		if _, err := s.stores.Raw.Delete(ctx, key, obj.Revision); err != nil {
			return err
		}
		s.say.Say("delete %s: marked for deletion, held by its finalizer", key)
	}
	if err := s.startOperator(ctx, s.store); err != nil {
		return err
	}
	for _, key := range []string{"databases/appdb", "databases/archive", "roles/app"} {
		err := until(ctx, stepLimit, key+" gone", func() (bool, error) {
			_, err := s.stores.Raw.Get(ctx, key)
			return errors.Is(err, store.ErrNotFound), nil
		})
		if err != nil {
			return err
		}
		s.say.Say("%s: cleaned up, finalizer removed, gone from the store", key)
	}
	left, err := s.psql(ctx, "postgres", `SELECT COALESCE(string_agg(datname || ' (comment: ' || COALESCE(shobj_description(oid, 'pg_database'), 'none') || ')', ', '), 'none')
		FROM pg_database WHERE datname IN ('appdb', 'archive')`)
	if err != nil {
		return err
	}
	roles, err := s.psql(ctx, "postgres", "SELECT count(*) FROM pg_roles WHERE rolname = 'app'")
	if err != nil {
		return err
	}
	if left != "archive (comment: none)" || roles != "0" {
		return storyErr("after the restart: databases %s, roles named app: %s", left, roles)
	}
	s.say.Say("psql: appdb (reclaim delete) dropped; archive (reclaim retain) kept and released: %s; role app dropped", left)
	return nil
}

// dependencyState returns the state the debug page's JSON gives the
// dependency postgres of controller name.
func dependencyState(page, name string) string {
	var v struct {
		Controllers []struct {
			Name         string `json:"name"`
			Dependencies []struct {
				Name, State, LastError string
			} `json:"dependencies"`
		} `json:"controllers"`
	}
	if err := json.Unmarshal([]byte(page), &v); err != nil {
		return "unknown (" + err.Error() + ")"
	}
	for _, c := range v.Controllers {
		if c.Name != name {
			continue
		}
		for _, d := range c.Dependencies {
			if d.Name == DependencyName {
				return d.State
			}
		}
	}
	return "unknown"
}
