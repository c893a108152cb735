package httpstore

import (
	"context"
	"net/http"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

// A Client offers what a store served with the API-server layer
// (store/apistore) offers, so that a controller over a Client gets the
// layer's writes through reconcile.Request.Store, and an identity. A
// server whose store lacks one refuses it with an error matching both
// errors.ErrUnsupported and store.ErrInvalid, and changes nothing.
var (
	_ store.Identifier            = (*Client[int])(nil)
	_ apistore.StatusWriter[int]  = (*Client[int])(nil)
	_ apistore.Replacer[int]      = (*Client[int])(nil)
	_ apistore.Applier[int]       = (*Client[int])(nil)
	_ apistore.PropagatingDeleter = (*Client[int])(nil)
)

// Identity returns the served store's identity (store.Identifier): the same
// from every client of the store. A served store without one fails it with
// an error matching errors.ErrUnsupported and store.ErrInvalid; an empty
// identity answered is ErrProtocol.
func (c *Client[T]) Identity(ctx context.Context) (string, error) {
	var body identityBody
	if err := c.call(ctx, http.MethodGet, pathIdentity, nil, nil, false, &body); err != nil {
		return "", err
	}
	if body.Identity == "" {
		return "", protocolErrorf("%s: an empty identity", pathIdentity)
	}
	return body.Identity, nil
}

// Kinds returns the kinds document the server declares (see WithKinds):
// store/apistore/schema's rules, printer columns included. A server that
// declares none fails it with an error matching errors.ErrUnsupported and
// store.ErrInvalid.
func (c *Client[T]) Kinds(ctx context.Context) ([]byte, error) {
	var body kindsBody
	if err := c.call(ctx, http.MethodGet, pathKinds, nil, nil, false, &body); err != nil {
		return nil, err
	}
	if len(body.Kinds) == 0 {
		return nil, protocolErrorf("%s: no kinds document", pathKinds)
	}
	return body.Kinds, nil
}

// UpdateStatus writes the status of value over the stored spec and
// metadata if the object's revision is still revision
// (apistore.StatusWriter; see apistore.Store.UpdateStatus), and returns the
// object as stored. A served store that writes no status alone (one
// without the layer) fails it with an error matching errors.ErrUnsupported
// and store.ErrInvalid. An error matching store.ErrUnavailable means the
// answer was lost: the write may have happened.
func (c *Client[T]) UpdateStatus(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (store.Object[T], error) {
	obj, _, err := c.put(ctx, pathStatus, key, value, revision, true, guards)
	return obj, err
}

// Replace is Update that reports whether the write deleted the object
// (apistore.Replacer): over the API-server layer, removing the last
// finalizer of a marked object does, and obj then holds the value as the
// write left it, with the revision of the delete. Over a store without the
// layer, deleted is always false. An error matching store.ErrUnavailable
// means the answer was lost: the write may have happened.
func (c *Client[T]) Replace(ctx context.Context, key string, value T, revision int64, guards ...store.Guard) (obj store.Object[T], deleted bool, err error) {
	return c.put(ctx, pathUpdate, key, value, revision, true, guards)
}

// Apply makes the object at key hold what doc states, creating it if
// absent (apistore.Applier; see apistore.Store.Apply): the server's layer
// computes the write, keeping the finalizers and owners doc does not name
// and never completing a deletion, and retries it on conflict. It returns
// the object as stored. A served store without the layer fails it with an
// error matching errors.ErrUnsupported and store.ErrInvalid, and writes
// nothing. An error matching store.ErrUnavailable means the answer was
// lost: the write may have happened.
func (c *Client[T]) Apply(ctx context.Context, key string, doc T, guards ...store.Guard) (store.Object[T], error) {
	obj, _, err := c.put(ctx, pathApply, key, doc, 0, false, guards)
	return obj, err
}

// DeleteWith deletes key if its revision is still revision, with
// propagation p ("" gives none: the object's own garbage-collector
// finalizer decides), and reports whether the object was
// only marked for deletion (apistore.PropagatingDeleter; see
// apistore.Store.DeleteWith): rev is then the mark's revision, or the
// revision of an object already marked. An unknown p fails with
// store.ErrInvalid before anything is sent. A served store without the
// layer deletes with Background (or "") alone: Foreground and Orphan fail there
// with an error matching errors.ErrUnsupported and store.ErrInvalid. An
// error matching store.ErrUnavailable means the answer was lost: the key
// may have been deleted or marked.
func (c *Client[T]) DeleteWith(ctx context.Context, key string, revision int64, p apistore.Propagation, guards ...store.Guard) (rev int64, marked bool, err error) {
	p, err = checkPropagation(p)
	if err != nil {
		return 0, false, err
	}
	q, err := writeQuery(key, revision, true, guards)
	if err != nil {
		return 0, false, err
	}
	if p != "" {
		q.Set(paramPropagation, string(p))
	}
	var body deleteBody
	if err := c.call(ctx, http.MethodPost, pathDelete, q, nil, true, &body); err != nil {
		return 0, false, err
	}
	return body.Revision, body.Marked, nil
}
