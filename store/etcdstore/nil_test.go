package etcdstore_test

import (
	"context"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// TestNilInputsAreInvalid: a nil context, and a Store not made by New,
// give an error matching store.ErrInvalid from every method, never a
// panic, and send nothing.
func TestNilInputsAreInvalid(t *testing.T) {
	client := clientv3.NewCtxClient(t.Context())
	defer client.Close()
	s := newStore(t, client, "app/")
	var zero *etcdstore.Store[*item]
	var nilCtx context.Context
	ctx := t.Context()
	for name, s := range map[string]*etcdstore.Store[*item]{"nil context": s, "nil store": zero} {
		c := nilCtx
		if s == zero {
			c = ctx
		}
		calls := map[string]func() error{
			"Get":      func() error { _, err := s.Get(c, "a"); return err },
			"List":     func() error { _, _, err := s.List(c, ""); return err },
			"Create":   func() error { _, err := s.Create(c, "a", &item{}); return err },
			"Update":   func() error { _, err := s.Update(c, "a", &item{}, 1); return err },
			"Delete":   func() error { _, err := s.Delete(c, "a", 1); return err },
			"Watch":    func() error { _, err := s.Watch(c, "", 0); return err },
			"Revision": func() error { _, err := s.Revision(c); return err },
			"Compact":  func() error { return s.Compact(c, 1) },
			"Identity": func() error { _, err := s.Identity(c); return err },
		}
		for method, call := range calls {
			require.NotPanics(t, func() {
				require.ErrorIs(t, call(), store.ErrInvalid, "%s: %s", name, method)
			}, "%s: %s", name, method)
		}
	}
	l, err := etcdstore.NewLocker(s, "leader")
	require.NoError(t, err)
	_, err = l.Acquire(nilCtx)
	require.ErrorIs(t, err, store.ErrInvalid, "Acquire")
	_, err = etcdstore.NewLocker(zero, "leader")
	require.ErrorIs(t, err, store.ErrInvalid, "NewLocker of a nil store")
}
