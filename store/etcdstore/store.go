package etcdstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/converge-go/converge/store"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// Store is a store.Store whose objects live in etcd under a key prefix. It is
// safe for concurrent use. Values are encoded with the Store's Codec: every
// Get, List and watch event decodes a fresh value, which the caller owns.
// Objects returned by writes carry the value the caller passed in.
type Store[T any] struct {
	client       *clientv3.Client
	prefix       string
	codec        store.Codec[T]
	maxValueSize int
	openTimeout  time.Duration
}

var _ store.Store[int] = (*Store[int])(nil)

// New returns a Store over client whose keys live under prefix. The prefix
// must be a valid key (see store.ValidateKey) that ends with "/", so that a
// Store on "app/" never sees the keys of one on "app2/" (nested prefixes such
// as "app/" and "app/sub/" do overlap: avoid them). The etcd keys written are
// the prefix followed by the Store's key.
//
// New sends no request: an unreachable cluster shows as store.ErrUnavailable
// on the first call. It fails with an error matching store.ErrInvalid if
// client is nil, the prefix is malformed or an option is out of range.
func New[T any](client *clientv3.Client, prefix string, opts ...Option) (*Store[T], error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil etcd client", store.ErrInvalid)
	}
	if err := store.ValidateKey(prefix); err != nil {
		return nil, fmt.Errorf("etcdstore: prefix: %w", err)
	}
	if !strings.HasSuffix(prefix, "/") {
		return nil, fmt.Errorf("%w: prefix %q does not end with \"/\"", store.ErrInvalid, prefix)
	}
	codec, cfg, err := newConfig[T](opts)
	if err != nil {
		return nil, err
	}
	return &Store[T]{client: client, prefix: prefix, codec: codec, maxValueSize: cfg.maxValueSize, openTimeout: cfg.openTimeout}, nil
}

// Codec returns the codec that encodes the store's values (store.Encoded),
// so that helpers judge a write by the bytes etcd would keep.
func (s *Store[T]) Codec() store.Codec[T] {
	if s == nil {
		return nil
	}
	return s.codec
}

var _ store.Encoded[int] = (*Store[int])(nil)

// Prefix returns the etcd key prefix under which the Store's keys live.
func (s *Store[T]) Prefix() string {
	if s == nil {
		return ""
	}
	return s.prefix
}

// Get returns the object stored at key, or an error matching
// store.ErrNotFound. The read is linearizable.
func (s *Store[T]) Get(ctx context.Context, key string) (store.Object[T], error) {
	if err := s.check(ctx); err != nil {
		return store.Object[T]{}, err
	}
	if err := store.ValidateKey(key); err != nil {
		return store.Object[T]{}, err
	}
	if err := ctx.Err(); err != nil {
		return store.Object[T]{}, err
	}
	resp, err := s.client.Get(clientv3.WithRequireLeader(ctx), s.prefix+key)
	if err != nil {
		return store.Object[T]{}, requestError(ctx, err, "get %q", key)
	}
	if len(resp.Kvs) == 0 {
		return store.Object[T]{}, fmt.Errorf("%w: %q", store.ErrNotFound, key)
	}
	return s.object(resp.Kvs[0])
}

// List returns the objects whose keys start with prefix, sorted by key, from
// one linearizable range request, with the cluster revision it reflects.
// The identity record (see Identity) is not an object and is left out.
func (s *Store[T]) List(ctx context.Context, prefix string) ([]store.Object[T], int64, error) {
	if err := s.check(ctx); err != nil {
		return nil, 0, err
	}
	if err := store.ValidatePrefix(prefix); err != nil {
		return nil, 0, err
	}
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	resp, err := s.client.Get(clientv3.WithRequireLeader(ctx), s.prefix+prefix, clientv3.WithPrefix())
	if err != nil {
		return nil, 0, requestError(ctx, err, "list %q", prefix)
	}
	objs := make([]store.Object[T], 0, len(resp.Kvs))
	for _, kv := range resp.Kvs {
		if s.isRecord(kv.Key) {
			continue
		}
		obj, err := s.object(kv)
		if err != nil {
			return nil, 0, err
		}
		objs = append(objs, obj)
	}
	return objs, resp.Header.Revision, nil
}

// Revision returns the cluster's current revision, from a linearizable
// request that reads no value. It is at least the revision of every write
// acknowledged before the call, and ahead of this Store's last write if
// anything else was written to the cluster since.
func (s *Store[T]) Revision(ctx context.Context) (int64, error) {
	if err := s.check(ctx); err != nil {
		return 0, err
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	resp, err := s.client.Get(clientv3.WithRequireLeader(ctx), s.prefix, clientv3.WithCountOnly())
	if err != nil {
		return 0, requestError(ctx, err, "revision")
	}
	return resp.Header.Revision, nil
}

// object decodes an etcd key-value under the prefix.
func (s *Store[T]) object(kv *mvccpb.KeyValue) (store.Object[T], error) {
	key := strings.TrimPrefix(string(kv.Key), s.prefix)
	v, err := s.decode(key, kv.Value)
	if err != nil {
		return store.Object[T]{}, err
	}
	return store.Object[T]{Key: key, Value: v, Revision: kv.ModRevision, CreateRevision: kv.CreateRevision}, nil
}

func (s *Store[T]) decode(key string, data []byte) (T, error) {
	v, err := s.codec.Unmarshal(data)
	if err != nil {
		return v, fmt.Errorf("etcdstore: value of %q: %w", key, err)
	}
	return v, nil
}

// encode validates and encodes a value for a write.
func (s *Store[T]) encode(v T) (string, error) {
	if err := store.ValidateValue(v); err != nil {
		return "", err
	}
	b, err := s.codec.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("etcdstore: encode value: %w", err)
	}
	if len(b) > s.maxValueSize {
		return "", fmt.Errorf("%w: encoded value of %d bytes exceeds the maximum of %d", store.ErrInvalid, len(b), s.maxValueSize)
	}
	return string(b), nil
}

// check refuses a Store not made by New and a nil context, with an error
// matching store.ErrInvalid.
func (s *Store[T]) check(ctx context.Context) error {
	if s == nil || s.client == nil {
		return fmt.Errorf("%w: etcdstore: Store not made by New", store.ErrInvalid)
	}
	return checkContext(ctx)
}

// checkContext refuses a nil context with an error matching
// store.ErrInvalid, as every method of the package does.
func checkContext(ctx context.Context) error {
	if ctx == nil {
		return fmt.Errorf("%w: etcdstore: nil context", store.ErrInvalid)
	}
	return nil
}
