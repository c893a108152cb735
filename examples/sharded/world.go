package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sync/errgroup"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
)

// world is the parent's view of a run's keys in etcd: the items it writes
// (desired generations) and the owner records it reads.
type world struct {
	cli    *clientv3.Client
	prefix string
	items  *etcdstore.Store[*Item]
	keys   []string
}

func newWorld(cli *clientv3.Client, prefix string, n int) (*world, error) {
	items, err := etcdstore.New[*Item](cli, prefix)
	if err != nil {
		return nil, err
	}
	w := &world{cli: cli, prefix: prefix, items: items}
	for i := range n {
		w.keys = append(w.keys, fmt.Sprintf("%s%05d", itemsPrefix, i))
	}
	return w, nil
}

// writers is how many writes the parent has in flight at once.
const writers = 32

// create writes every item at generation 1.
func (w *world) create(ctx context.Context) error {
	return w.each(ctx, func(ctx context.Context, key string) error {
		_, err := w.items.Create(ctx, key, &Item{Generation: 1})
		return err
	})
}

// txnOps is how many items one transaction of bump writes: below etcd's
// default --max-txn-ops (128).
const txnOps = 100

// bump raises every item's generation by one, a hundred items per etcd
// transaction (so that the writes come faster than the replicas
// reconcile), each write conditioned on the item's revision; a batch that
// lost against a replica's status write is redone item by item with
// store.Modify.
func (w *world) bump(ctx context.Context) error {
	objs, _, err := w.items.List(ctx, itemsPrefix)
	if err != nil {
		return err
	}
	var batches [][]store.Object[*Item]
	for len(objs) > 0 {
		n := min(txnOps, len(objs))
		batches = append(batches, objs[:n])
		objs = objs[n:]
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(writers)
	for _, batch := range batches {
		g.Go(func() error { return w.bumpBatch(gctx, batch) })
	}
	return g.Wait()
}

func (w *world) bumpBatch(ctx context.Context, batch []store.Object[*Item]) error {
	var cmps []clientv3.Cmp
	var puts []clientv3.Op
	for _, o := range batch {
		next := *o.Value
		next.Generation++
		b, err := json.Marshal(&next)
		if err != nil {
			return err
		}
		key := w.prefix + o.Key
		cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(key), "=", o.Revision))
		puts = append(puts, clientv3.OpPut(key, string(b)))
	}
	resp, err := w.cli.Txn(ctx).If(cmps...).Then(puts...).Commit()
	if err != nil {
		return err
	}
	if resp.Succeeded {
		return nil
	}
	for _, o := range batch {
		_, err := store.Modify(ctx, w.items, o.Key, func(it *Item) (*Item, error) {
			next := *it
			next.Generation++
			return &next, nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func (w *world) each(ctx context.Context, fn func(ctx context.Context, key string) error) error {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(writers)
	for _, key := range w.keys {
		g.Go(func() error { return fn(ctx, key) })
	}
	return g.Wait()
}

// converged reports how many items have observed their generation.
func (w *world) converged(ctx context.Context) (int, error) {
	objs, _, err := w.items.List(ctx, itemsPrefix)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, o := range objs {
		if o.Value.Observed == o.Value.Generation {
			n++
		}
	}
	return n, nil
}

// owners returns the owner of every bucket that has an owner record.
func (w *world) owners(ctx context.Context) (map[int]string, error) {
	p := w.prefix + shardPrefix + "owner/"
	resp, err := w.cli.Get(ctx, p, clientv3.WithPrefix())
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, kv := range resp.Kvs {
		b, err := strconv.Atoi(strings.TrimPrefix(string(kv.Key), p))
		if err != nil {
			return nil, fmt.Errorf("owner record %q: %w", kv.Key, err)
		}
		var rec struct {
			Owner string `json:"owner"`
		}
		if err := json.Unmarshal(kv.Value, &rec); err != nil {
			return nil, fmt.Errorf("owner record %q: %w", kv.Key, err)
		}
		out[b] = rec.Owner
	}
	return out, nil
}

// spread counts buckets per owner.
func spread(owners map[int]string) map[string]int {
	n := map[string]int{}
	for _, o := range owners {
		n[o]++
	}
	return n
}

// balanced reports whether every bucket of buckets is owned by one of
// ids, each of which owns floor or ceil of buckets/len(ids).
func balanced(owners map[int]string, buckets int, ids []string) bool {
	if len(owners) != buckets || len(ids) == 0 {
		return false
	}
	n := spread(owners)
	lo, hi := buckets/len(ids), (buckets+len(ids)-1)/len(ids)
	total := 0
	for _, id := range ids {
		if n[id] < lo || n[id] > hi {
			return false
		}
		total += n[id]
	}
	return total == buckets
}

// clean deletes the run's keys (for an existing cluster).
func (w *world) clean(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := w.cli.Delete(ctx, w.prefix, clientv3.WithPrefix())
	return err
}
