package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/converge-go/converge/examples/internal/etcdflag"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/shard"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
)

// replicaEnv, set to "1", makes this program run as one replica process
// (runReplica) instead of the demo: the demo starts its replicas that way.
const replicaEnv = "CONVERGE_SHARDED_REPLICA"

// Item is one key's desired and observed state: the pretend world is
// converged for the key when Observed equals Generation.
type Item struct {
	Generation int64  `json:"generation"`
	Observed   int64  `json:"observed"`
	By         string `json:"by,omitempty"`
	// Writes counts status writes in churn mode (-churn), where every
	// reconcile writes.
	Writes int64 `json:"writes,omitempty"`
}

// Key layout under the run's prefix.
const (
	itemsPrefix = "items/"
	shardPrefix = "shard/"
)

// replicaConfig is a replica process's command line.
type replicaConfig struct {
	id, prefix, record string
	buckets, workers   int
	ttl, io            time.Duration
	churn, noWrites    bool
	etcd               *etcdflag.Flags
}

// args returns the command line that sets c in a replica process.
func (c replicaConfig) args() []string {
	args := []string{
		"-id=" + c.id, "-prefix=" + c.prefix, "-record=" + c.record,
		fmt.Sprintf("-buckets=%d", c.buckets), fmt.Sprintf("-workers=%d", c.workers),
		"-ttl=" + c.ttl.String(), "-io=" + c.io.String(), fmt.Sprintf("-churn=%t", c.churn), fmt.Sprintf("-no-writes=%t", c.noWrites),
	}
	return append(args, c.etcd.Args()...)
}

// parseReplica reads a replica process's command line.
func parseReplica(args []string, stderr io.Writer) (replicaConfig, error) {
	fs := flag.NewFlagSet("sharded replica", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c replicaConfig
	fs.StringVar(&c.id, "id", "", "replica ID")
	fs.StringVar(&c.prefix, "prefix", "", "etcd key prefix of the run")
	fs.StringVar(&c.record, "record", "", "the shared record file")
	fs.IntVar(&c.buckets, "buckets", 0, "bucket count")
	fs.IntVar(&c.workers, "workers", 1, "reconcile workers")
	fs.DurationVar(&c.ttl, "ttl", 0, "membership TTL")
	fs.DurationVar(&c.io, "io", 0, "pretend I/O per reconcile")
	fs.BoolVar(&c.churn, "churn", false, "write on every reconcile and requeue")
	fs.BoolVar(&c.noWrites, "no-writes", false, "with -churn: requeue without writing")
	c.etcd = etcdflag.Register(fs)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.id == "" || c.prefix == "" || c.record == "" || c.etcd.Endpoints == "" {
		return c, errors.New("-id, -prefix, -record and -etcd are required")
	}
	return c, nil
}

// runReplica is main in a replica process: it runs one shard.Replica and
// one sharded controller until SIGTERM or SIGINT, recording what it does.
// SIGUSR1 prepares a late write (a claim taken now), SIGUSR2 sends it.
func runReplica(args []string, stderr io.Writer) int {
	cfg, err := parseReplica(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "sharded replica:", err)
		return 2
	}
	if err := replicaMain(cfg, stderr); err != nil {
		fmt.Fprintln(stderr, "sharded replica:", err)
		return 1
	}
	return 0
}

func replicaMain(cfg replicaConfig, stderr io.Writer) (err error) {
	rec, err := openRecorder(cfg.record, cfg.id)
	if err != nil {
		return err
	}
	defer rec.close()
	e, err := etcdflag.Open(*cfg.etcd, "")
	if err != nil {
		return err
	}
	defer e.Close()
	cli, err := e.Client()
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, cli.Close()) }()
	raw, err := etcdstore.New[[]byte](cli, cfg.prefix, etcdstore.WithCodec[[]byte](rawCodec{}))
	if err != nil {
		return err
	}
	items, err := etcdstore.New[*Item](cli, cfg.prefix)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelError}))
	rep, err := shard.New(raw, shard.Options{ID: cfg.id, Prefix: shardPrefix, Buckets: cfg.buckets, TTL: cfg.ttl, Logger: logger})
	if err != nil {
		return err
	}
	r := &replica{cfg: cfg, rec: rec, claims: &claims{Replica: rep, epochs: map[string]int64{}}, items: items}
	ctrl, err := reconcile.New[*Item](items, r.reconciler(), reconcile.Options[*Item]{
		Name: "items", Prefix: itemsPrefix, Workers: cfg.workers, Shard: r.claims,
		GracePeriod: time.Second, Logger: logger,
	})
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	rec.put(kindUp, "", int64(os.Getpid()), 0, "")
	// The replica and its controller run until the signal; if either
	// stops on its own, the other is stopped too and the error returned.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var repErr, ctrlErr error
	wg.Go(func() { repErr = rep.Run(ctx); cancel() })
	wg.Go(func() { ctrlErr = ctrl.Run(ctx); cancel() })
	wg.Go(func() { r.reportOwned(ctx) })
	wg.Go(func() { r.lateWrites(ctx) })
	wg.Wait()
	rec.put(kindRunDone, "", 0, 0, "")
	return errors.Join(repErr, ctrlErr)
}

// rawCodec keeps bytes as they are, so that the sharding records are plain
// JSON in etcd like the items.
type rawCodec struct{}

func (rawCodec) Marshal(v []byte) ([]byte, error)      { return v, nil }
func (rawCodec) Unmarshal(data []byte) ([]byte, error) { return append([]byte(nil), data...), nil }

// claims is the replica's Sharder: shard.Replica's, noting the epoch of
// each key's latest claim for the records. The controller claims a key
// right before reconciling it and reconciles a key in one worker at a
// time, so the epoch noted is the one the reconcile's writes carry.
type claims struct {
	*shard.Replica
	mu     sync.Mutex
	epochs map[string]int64
}

func (c *claims) Claim(key string) (reconcile.Claim, bool) {
	cl, ok := c.Replica.Claim(key)
	if ok {
		c.mu.Lock()
		c.epochs[key] = epochOf(cl.Guards)
		c.mu.Unlock()
	}
	return cl, ok
}

func (c *claims) epoch(key string) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.epochs[key]
}

// epochOf returns the revision of the owner-record guard among guards.
func epochOf(guards []store.Guard) int64 {
	for _, g := range guards {
		if strings.HasPrefix(g.Key, shardPrefix+"owner/") {
			return g.Revision
		}
	}
	return 0
}

// reconciler returns the example's reconciler (reconciler.go), wrapped in
// the churn of the measurements when asked for, and in the recording.
func (r *replica) reconciler() reconcile.Reconciler[*Item] {
	var next reconcile.Reconciler[*Item] = itemReconciler{id: r.cfg.id, io: r.cfg.io}
	if r.cfg.churn {
		next = churning{next: next, noWrites: r.cfg.noWrites}
	}
	return recorded{next: next, rec: r.rec, claims: r.claims}
}

// replica is the state of a replica process.
type replica struct {
	cfg    replicaConfig
	rec    *recorder
	claims *claims
	items  *etcdstore.Store[*Item]
}

// outcome names how a reconcile or a write ended.
func outcome(ctx context.Context, err error) string {
	switch {
	case err == nil:
		return outOK
	case errors.Is(err, store.ErrGuardFailed):
		return outGuard
	case errors.Is(err, store.ErrConflict):
		return outConflict
	case ctx.Err() != nil:
		return outCanceled
	default:
		return outError
	}
}

// statusPoll is how often reportOwned reads the replica's Status: every
// 5 ms, so that a release record comes at most 5 ms after the decision,
// except in churn mode (no handover measured), where a slower poll leaves
// the CPU to the reconciles.
func (c replicaConfig) statusPoll() time.Duration {
	if c.churn {
		return 100 * time.Millisecond
	}
	return 5 * time.Millisecond
}

// reportOwned records the number of buckets owned each time it changes,
// each bucket this replica starts to hand over, and each it gains.
func (r *replica) reportOwned(ctx context.Context) {
	tick := time.NewTicker(r.cfg.statusPoll())
	defer tick.Stop()
	last := -1
	releasing, mine := map[int]bool{}, map[int]bool{}
	for {
		st := r.claims.Status()
		if st.Owned != last {
			r.rec.put(kindOwned, "", int64(st.Owned), 0, "")
			last = st.Owned
		}
		for _, b := range st.Buckets {
			if b.Releasing && !releasing[b.Bucket] {
				r.rec.put(kindRelease, "", int64(b.Bucket), 0, b.Target)
			}
			if b.Mine && !mine[b.Bucket] {
				r.rec.put(kindGained, "", int64(b.Bucket), 0, "")
			}
			releasing[b.Bucket], mine[b.Bucket] = b.Releasing, b.Mine
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// late is a write prepared under a claim and sent later.
type late struct {
	obj    store.Object[*Item]
	guards []store.Guard
	epoch  int64
}

// lateWrites prepares a late write on SIGUSR1 (a claim and the object now)
// and sends it on SIGUSR2 with the guards of that claim, as a reconcile
// that was held up in between would.
func (r *replica) lateWrites(ctx context.Context) {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(sigs)
	var held *late
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-sigs:
			switch {
			case sig == syscall.SIGUSR1:
				held = r.prepareLate(ctx)
			case held != nil:
				r.sendLate(held)
				held = nil
			}
		}
	}
}

func (r *replica) prepareLate(ctx context.Context) *late {
	objs, _, err := r.items.List(ctx, itemsPrefix)
	if err != nil {
		r.rec.put(kindArmed, "", 0, 0, outError)
		return nil
	}
	for _, o := range objs {
		if cl, ok := r.claims.Replica.Claim(o.Key); ok {
			l := &late{obj: o, guards: cl.Guards, epoch: epochOf(cl.Guards)}
			r.rec.put(kindArmed, o.Key, l.epoch, o.Revision, "")
			return l
		}
	}
	r.rec.put(kindArmed, "", 0, 0, "none-owned")
	return nil
}

func (r *replica) sendLate(l *late) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	item := *l.obj.Value
	item.By = r.cfg.id + "-late"
	obj, err := r.items.Update(ctx, l.obj.Key, &item, l.obj.Revision, l.guards...)
	note := outcome(ctx, err)
	if err == nil {
		note = outAccepted
		r.rec.put(kindWrite, l.obj.Key, l.epoch, obj.Revision, "")
	}
	r.rec.put(kindLate, l.obj.Key, l.epoch, l.obj.Revision, note)
}
