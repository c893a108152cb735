package prune_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/store"
)

// replacedStore is a store whose identity changes after a number of
// reads of it, as an etcd cluster replaced behind a running client.
type replacedStore struct {
	store.Store[*db]
	reads   atomic.Int32
	changes int32 // the read from which the identity is another
}

func (r *replacedStore) Identity(context.Context) (string, error) {
	if r.reads.Add(1) >= r.changes {
		return "memory:REPLACEMENT", nil
	}
	return "memory:FIRST", nil
}

// TestAStoreReplacedDuringAPassRefusesIt: an identity read after the
// desired set that differs from the one read before the world refuses the
// pass with ErrIdentityChanged, although both the world and the desired
// set would have it delete.
func TestAStoreReplacedDuringAPassRefusesIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &replacedStore{Store: store.NewMemory[*db](), changes: 2}
		put(t, s, "dbs/keep")
		w := newWorld(object("dbs/gone", prune.Mark{Owner: owner, Store: "memory:FIRST"}))
		p := newPruner(t, &fakeController{}, s, w, prune.Options{})
		defer start(t, p)()
		pass, ran := p.Last()
		require.True(t, ran)
		require.ErrorIs(t, pass.Err, prune.ErrRefused)
		require.ErrorIs(t, pass.Err, prune.ErrIdentityChanged)
		require.Len(t, pass.World.Prune, 1, "withheld")
		require.Empty(t, w.deletedNames())
	})
}

// TestAFailedReadDeletesNothingAndAFailedDeleteStopsNoOther: a world or
// store that cannot be listed fails the pass before anything is deleted;
// a delete that fails is reported and the other deletes are made.
func TestAFailedReadDeletesNothingAndAFailedDeleteStopsNoOther(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := store.NewMemory[*db]()
		mine := prune.Mark{Owner: owner, Store: identity(t, s)}
		put(t, s, "dbs/keep")
		w := newWorld(object("dbs/a", mine), object("dbs/b", mine), object("dbs/c", mine))
		c := &fakeController{}
		failList := errors.New("the database server is down")
		p, err := prune.New(c, s, prune.Options{Name: owner, Prefix: "dbs/",
			World: func(context.Context) ([]prune.WorldObject, error) { return nil, failList },
			Delete: func(context.Context, prune.WorldObject) error {
				t.Error("deleted after a failed list")
				return nil
			}})
		require.NoError(t, err)
		stop := start(t, p)
		pass, _ := p.Last()
		require.ErrorIs(t, pass.Err, failList)
		require.NotErrorIs(t, pass.Err, prune.ErrRefused)
		stop()

		busy := errors.New("database b is in use")
		p, err = prune.New(c, s, prune.Options{Name: owner, Prefix: "dbs/", World: w.list,
			Delete: func(ctx context.Context, obj prune.WorldObject) error {
				if obj.Name == "b" {
					return busy
				}
				return w.delete(ctx, obj)
			}})
		require.NoError(t, err)
		defer start(t, p)()
		pass, _ = p.Last()
		require.ErrorIs(t, pass.Err, busy)
		require.Equal(t, []prune.WorldObject{object("dbs/a", mine), object("dbs/c", mine)}, pass.Pruned)
		require.Equal(t, []string{"b"}, w.names())
	})
}

// TestNewRefusesBadInputWithErrInvalid: a nil controller or store, a
// store without an identity, and bad options are refused with an error
// matching store.ErrInvalid.
func TestNewRefusesBadInputWithErrInvalid(t *testing.T) {
	s := store.NewMemory[*db]()
	w := newWorld()
	good := prune.Options{Name: owner, Prefix: "dbs/", World: w.list, Delete: w.delete}
	var nilController *reconcile.Controller[*db]
	var nilStore *store.Memory[*db]
	inputs := map[string]struct {
		c prune.Controller
		s store.Store[*db]
	}{
		"nil controller":       {nil, s},
		"typed nil controller": {nilController, s},
		"nil store":            {&fakeController{}, nil},
		"typed nil store":      {&fakeController{}, nilStore},
		"no identity":          {&fakeController{}, struct{ store.Store[*db] }{s}},
	}
	for name, in := range inputs {
		_, err := prune.New(in.c, in.s, good)
		require.ErrorIs(t, err, store.ErrInvalid, name)
	}
	options := map[string]func(*prune.Options){
		"empty name":        func(o *prune.Options) { o.Name = "" },
		"negative interval": func(o *prune.Options) { o.Interval = -time.Second },
		"nil world":         func(o *prune.Options) { o.World = nil },
		"nil delete":        func(o *prune.Options) { o.Delete = nil },
		"bad prefix":        func(o *prune.Options) { o.Prefix = "\xff" },
	}
	for name, change := range options {
		o := good
		change(&o)
		_, err := prune.New(&fakeController{}, s, o)
		require.ErrorIs(t, err, store.ErrInvalid, name)
	}
	_, err := prune.New(&fakeController{}, s, good)
	require.NoError(t, err)
}
