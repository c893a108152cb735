package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/internal/etcdflag"
	"github.com/converge-go/converge/reconcile/shard"
)

// session is one run: etcd (existing or embedded), the run's keys under a
// prefix of their own, the replica processes and their records.
type session struct {
	cfg    Config
	dir    string
	etcd   *etcdflag.Etcd
	cli    *clientv3.Client
	prefix string
	world  *world
	fleet  *fleet
	log    *recordLog
}

// openSession connects to etcd (starting a member if cfg.Etcd names
// none), writes cfg.Keys items at generation 1 and prepares the fleet.
// The caller calls close.
func openSession(ctx context.Context, cfg Config) (s *session, err error) {
	s = &session{cfg: cfg, prefix: fmt.Sprintf("converge-sharded/%d/", time.Now().UnixNano())}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.close(ctx))
			s = nil
		}
	}()
	if s.dir, err = os.MkdirTemp("", "converge-sharded-"); err != nil {
		return s, err
	}
	if s.etcd, err = etcdflag.Open(cfg.Etcd, filepath.Join(s.dir, "etcd")); err != nil {
		return s, err
	}
	if s.cli, err = s.etcd.Client(); err != nil {
		return s, err
	}
	if s.world, err = newWorld(s.cli, s.prefix, cfg.Keys); err != nil {
		return s, err
	}
	if err = s.world.create(ctx); err != nil {
		return s, fmt.Errorf("write the items: %w", err)
	}
	recPath := filepath.Join(s.dir, "records")
	if s.log, err = openRecordLog(recPath); err != nil {
		return s, err
	}
	flags := s.etcd.Flags()
	s.fleet, err = newFleet(cfg.Executable, s.dir, replicaConfig{
		prefix: s.prefix, record: recPath, buckets: cfg.Buckets, workers: cfg.Workers,
		ttl: cfg.TTL, io: cfg.IO, churn: cfg.Churn, noWrites: cfg.NoWrites, etcd: &flags,
	})
	return s, err
}

// close stops the replicas, deletes the run's keys and stops what
// openSession started.
func (s *session) close(ctx context.Context) error {
	var errs []error
	if s.fleet != nil {
		errs = append(errs, s.fleet.close(10*time.Second))
	}
	if s.world != nil && !s.etcd.Embedded() {
		errs = append(errs, s.world.clean(context.WithoutCancel(ctx)))
	}
	if s.log != nil {
		errs = append(errs, s.log.close())
	}
	if s.cli != nil {
		errs = append(errs, s.cli.Close())
	}
	if s.etcd != nil {
		s.etcd.Close()
	}
	if s.dir != "" {
		errs = append(errs, os.RemoveAll(s.dir))
	}
	return errors.Join(errs...)
}

// records returns every record so far.
func (s *session) records() ([]record, error) { return s.log.read() }

// waitBalanced waits until every bucket is owned by one of ids, evenly,
// and returns the owners.
func (s *session) waitBalanced(ctx context.Context, what string, ids []string) (map[int]string, error) {
	var owners map[int]string
	err := demo.WaitFor(ctx, what, s.cfg.Timeout, func() (bool, error) {
		var err error
		owners, err = s.world.owners(ctx)
		return err == nil && balanced(owners, s.cfg.Buckets, ids), err
	})
	return owners, err
}

// waitWrites waits until each of ids has had n more writes accepted, in
// the records, than when it was called: churn under the current owners.
func (s *session) waitWrites(ctx context.Context, what string, ids []string, n int) error {
	count := func() (map[string]int, error) {
		recs, err := s.records()
		got := map[string]int{}
		for _, r := range recs {
			if r.Kind == kindWrite {
				got[r.Who]++
			}
		}
		return got, err
	}
	before, err := count()
	if err != nil {
		return err
	}
	return demo.WaitFor(ctx, what, s.cfg.Timeout, func() (bool, error) {
		now, err := count()
		if err != nil {
			return false, err
		}
		for _, id := range ids {
			if now[id]-before[id] < n {
				return false, nil
			}
		}
		return true, nil
	})
}

// waitConverged waits until every item has observed its generation.
func (s *session) waitConverged(ctx context.Context, what string) error {
	return demo.WaitFor(ctx, what, s.cfg.Timeout, func() (bool, error) {
		n, err := s.world.converged(ctx)
		return n == len(s.world.keys), err
	})
}

// round raises every item's generation and waits until all have
// converged; it returns the reconciles per second over the round, from
// the first write of the new generations to the last status write the
// records show.
func (s *session) round(ctx context.Context, what string) (float64, error) {
	start := time.Now()
	if err := s.world.bump(ctx); err != nil {
		return 0, err
	}

	if err := s.waitConverged(ctx, what); err != nil {
		return 0, err
	}
	recs, err := s.records()
	if err != nil {
		return 0, err
	}
	var last time.Time
	for _, r := range recs {
		if r.Kind == kindWrite && r.At.After(last) {
			last = r.At
		}
	}
	return float64(len(s.world.keys)) / last.Sub(start).Seconds(), nil
}

// firstReconciles returns, for each bucket of moved that has keys, the
// time from since to the first reconcile of one of its keys by another
// replica than from, among the records after index after.
func (s *session) firstReconciles(recs []record, after int, moved []int, from string, since time.Time) []time.Duration {
	return s.firsts(recs, after, moved, from, since, kindBegin)
}

// firsts returns, for each bucket of moved, the time from since to the
// first record of kind (kindBegin: a reconcile of one of its keys;
// kindGained: its gain) by another replica than from, among the records
// after index after.
func (s *session) firsts(recs []record, after int, moved []int, from string, since time.Time, kind string) []time.Duration {
	want := map[int]bool{}
	for _, b := range moved {
		want[b] = true
	}
	var out []time.Duration
	for _, r := range recs[after:] {
		if r.Kind != kind || r.Who == from {
			continue
		}
		b := int(r.N1)
		if kind == kindBegin {
			b = shard.Bucket(r.Key, s.cfg.Buckets)
		}
		if want[b] {
			out = append(out, r.At.Sub(since))
			delete(want, b)
		}
	}
	slices.Sort(out)
	return out
}

// waitFirstReconciles waits until firstReconciles has a sample for every
// bucket of moved that has keys, and returns them.
func (s *session) waitFirstReconciles(ctx context.Context, after int, moved []int, from string, since time.Time) ([]time.Duration, error) {
	withKeys := s.withKeys()
	want := 0
	for _, b := range moved {
		if withKeys[b] {
			want++
		}
	}
	var first []time.Duration
	err := demo.WaitFor(ctx, "the new owners' first reconciles", s.cfg.Timeout, func() (bool, error) {
		recs, err := s.records()
		first = s.firstReconciles(recs, after, moved, from, since)
		return len(first) == want, err
	})
	return first, err
}

// withKeys returns the buckets that hold keys.
func (s *session) withKeys() map[int]bool {
	bs := map[int]bool{}
	for _, key := range s.world.keys {
		bs[shard.Bucket(key, s.cfg.Buckets)] = true
	}
	return bs
}

// bucketsOf returns the buckets owners gives to id.
func bucketsOf(owners map[int]string, id string) []int {
	var bs []int
	for b, o := range owners {
		if o == id {
			bs = append(bs, b)
		}
	}
	sort.Ints(bs)
	return bs
}

// indexOf returns the index of the first record after from of kind by
// who (about key, if not empty), or -1.
func indexOf(recs []record, from int, kind, who, key string) int {
	for i := from; i < len(recs); i++ {
		if r := recs[i]; r.Kind == kind && r.Who == who && (key == "" || r.Key == key) {
			return i
		}
	}
	return -1
}

// waitRecord waits for a record of kind by who (about key, if not empty)
// after index from and returns its index.
func (s *session) waitRecord(ctx context.Context, what string, from int, kind, who, key string) (int, []record, error) {
	var i int
	var recs []record
	err := demo.WaitFor(ctx, what, s.cfg.Timeout, func() (bool, error) {
		var err error
		recs, err = s.records()
		i = indexOf(recs, from, kind, who, key)
		return i >= 0, err
	})
	return i, recs, err
}

// verdict stops the replicas and checks the run's records against etcd's
// owner history.
func (s *session) verdict(ctx context.Context) (verdict, error) {
	if err := s.fleet.close(10 * time.Second); err != nil {
		return verdict{}, err
	}
	recs, err := s.records()
	if err != nil {
		return verdict{}, err
	}
	hctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	hist, err := readOwnerHistory(hctx, s.cli, s.prefix)
	if err != nil {
		return verdict{}, err
	}
	return check(recs, hist, s.cfg.Buckets), nil
}

// percentile returns the p-th percentile (0-100) of sorted ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(float64(len(ds)-1) * p / 100)
	return ds[i]
}

// distribution formats sorted ds as "p50 x p90 y p99 z max w (n=k)".
func distribution(ds []time.Duration) string {
	if len(ds) == 0 {
		return "no samples"
	}
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("p50 %v, p90 %v, p99 %v, max %v (n=%d)",
		r(percentile(ds, 50)), r(percentile(ds, 90)), r(percentile(ds, 99)), r(ds[len(ds)-1]), len(ds))
}
