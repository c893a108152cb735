package shard

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/converge-go/converge/internal/ctxtime"
	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/faultstore"
)

// item is the test's object: the reconciler makes Seen equal Want and
// signs the write with its replica's ID.
type item struct {
	Want int    `json:"want"`
	Seen int    `json:"seen"`
	By   string `json:"by,omitempty"`
}

// cluster runs replicas, each with a controller, in one process over one
// byte store, each replica through a fault store of its own.
type cluster struct {
	t     *testing.T
	raw   *store.Memory[[]byte]
	items *store.View[*item]
	opts  Options
	act   time.Duration // how long a reconcile acts on the world
	det   *detector

	mu     sync.Mutex
	nodes  map[string]*node
	firsts map[int][]firstReconcile // bucket → reconciles that were a replica's first of it
}

// firstReconcile is a replica's first reconcile of a bucket since it took it.
type firstReconcile struct {
	id string
	at time.Time
}

// node is one incarnation of a replica and its controller.
type node struct {
	id     string
	fs     *faultstore.Store[[]byte]
	rep    *Replica
	cancel context.CancelFunc
	done   chan struct{}

	pauseUntil atomic.Int64 // unix nanos: calls until then are paused
	flaky      atomic.Bool  // random errors and delays
	latency    atomic.Int64 // nanoseconds every call waits
	rngMu      sync.Mutex
	rng        *rand.Rand
	ops        [7]atomic.Int64 // calls on the sharding records per faultstore.Op bit

	startedMu sync.Mutex
	started   map[int]int64 // bucket → the epoch of its last reconcile here
}

func newCluster(t *testing.T, opts Options, act time.Duration) *cluster {
	return newClusterHistory(t, opts, act, true)
}

// newClusterHistory is newCluster, with the check of accepted writes
// against the store's history only if history is set (a test that writes
// thousands of keys at once would outrun the history watch).
func newClusterHistory(t *testing.T, opts Options, act time.Duration, history bool) *cluster {
	raw := store.NewMemory[[]byte]()
	return &cluster{
		t: t, raw: raw, items: store.NewView[*item](raw, nil), opts: opts, act: act,
		det: newDetector(t, raw, opts, history), nodes: map[string]*node{}, firsts: map[int][]firstReconcile{},
	}
}

// start runs a new incarnation of replica id.
func (c *cluster) start(id string, seed uint64) *node {
	c.t.Helper()
	n := &node{id: id, rng: rand.New(rand.NewPCG(seed, 7)), started: map[int]int64{}}
	fs, err := faultstore.New[[]byte](c.raw, faultstore.Options{Plan: n.plan})
	if err != nil {
		c.t.Fatal(err)
	}
	n.fs = fs
	o := c.opts
	o.ID = id
	n.rep, err = New(fs, o)
	if err != nil {
		c.t.Fatal(err)
	}
	ctl, err := reconcile.New(store.NewView[*item](fs, nil), reconcile.ReconcilerFunc[*item](func(ctx context.Context, req reconcile.Request[*item]) (reconcile.Result, error) {
		return c.reconcile(ctx, n, req)
	}), reconcile.Options[*item]{Name: id, Prefix: "items/", Workers: 4, Shard: n.rep, GracePeriod: time.Second})
	if err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel, n.done = cancel, make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { _ = n.rep.Run(ctx) })
	wg.Go(func() { _ = ctl.Run(ctx) })
	go func() { wg.Wait(); close(n.done) }()
	c.mu.Lock()
	c.nodes[id] = n
	c.mu.Unlock()
	return n
}

// plan decides each call of n's store: paused while n is paused, random
// errors and delays while it is flaky; it counts the calls.
func (n *node) plan(call faultstore.Call) faultstore.Decision {
	if strings.HasPrefix(call.Key, DefaultPrefix) {
		for i := range n.ops {
			if call.Op&(1<<i) != 0 {
				n.ops[i].Add(1)
			}
		}
	}
	if d := time.Until(time.Unix(0, n.pauseUntil.Load())); d > 0 {
		return faultstore.Decision{Pause: d}
	}
	if !n.flaky.Load() {
		return faultstore.Decision{Delay: time.Duration(n.latency.Load())}
	}
	n.rngMu.Lock()
	r := n.rng.Float64()
	n.rngMu.Unlock()
	switch {
	case r < 0.05:
		return faultstore.Decision{Fault: faultstore.Fail}
	case r < 0.4:
		return faultstore.Decision{Delay: time.Duration(r * float64(200*time.Millisecond))}
	}
	return faultstore.Decision{}
}

// reconcile acts on the world for c.act (the shared detector watches this
// phase), then records Seen with a write signed by the replica.
func (c *cluster) reconcile(ctx context.Context, n *node, req reconcile.Request[*item]) (reconcile.Result, error) {
	if req.Deleted {
		return reconcile.Result{}, nil
	}
	b := Bucket(req.Key, c.opts.Buckets)
	var epoch int64
	if cl, ok := n.rep.Claim(req.Key); ok && len(cl.Guards) > 0 {
		epoch = cl.Guards[0].Revision
	}
	n.startedMu.Lock()
	first := n.started[b] != epoch
	n.started[b] = epoch
	n.startedMu.Unlock()
	if first {
		c.mu.Lock()
		c.firsts[b] = append(c.firsts[b], firstReconcile{id: n.id, at: time.Now()})
		c.mu.Unlock()
	}
	c.det.enter(req.Key, n.id)
	err := ctxtime.Sleep(ctx, c.act)
	c.det.exit(req.Key, n.id)
	if err != nil {
		return reconcile.Result{}, err
	}
	v := *req.Object.Value
	if v.Seen == v.Want {
		return reconcile.Result{}, nil
	}
	v.Seen, v.By = v.Want, n.id
	_, err = req.Store.Update(ctx, req.Key, &v, req.Object.Revision)
	if errors.Is(err, store.ErrGuardFailed) {
		c.det.mu.Lock()
		c.det.refused++
		c.det.mu.Unlock()
	}
	return reconcile.Result{}, err
}

// crash stops n abruptly: its store becomes unreachable (so it releases
// nothing), then it stops.
func (c *cluster) crash(n *node) {
	n.fs.SetOutage(faultstore.Loud)
	c.stop(n)
}

// stop stops n (gracefully unless its store is down) and waits for it.
func (c *cluster) stop(n *node) {
	n.cancel()
	<-n.done
	c.mu.Lock()
	if c.nodes[n.id] == n {
		delete(c.nodes, n.id)
	}
	c.mu.Unlock()
}

// running returns the running nodes, sorted by ID.
func (c *cluster) running() []*node {
	c.mu.Lock()
	defer c.mu.Unlock()
	ns := make([]*node, 0, len(c.nodes))
	for _, n := range c.nodes {
		ns = append(ns, n)
	}
	sort.Slice(ns, func(i, j int) bool { return ns[i].id < ns[j].id })
	return ns
}

// has reports whether an incarnation of replica id runs.
func (c *cluster) has(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[id] != nil
}

// bump changes the wanted value of key.
func (c *cluster) bump(key string) {
	_, err := store.CreateOrUpdate(context.Background(), c.items, key, func(v *item, ok bool) (*item, error) {
		if !ok {
			return &item{Want: 1}, nil
		}
		return &item{Want: v.Want + 1, Seen: v.Seen}, nil
	})
	if err != nil {
		c.t.Fatal(err)
	}
}

// converged reports whether every key's Seen equals its Want.
func (c *cluster) converged() (bool, string) {
	objs, _, err := c.items.List(context.Background(), "items/")
	if err != nil {
		return false, err.Error()
	}
	for _, o := range objs {
		if o.Value.Seen != o.Value.Want {
			return false, fmt.Sprintf("%s: want %d, seen %d", o.Key, o.Value.Want, o.Value.Seen)
		}
	}
	return true, ""
}

// detector checks, across replicas, that no key is reconciled by two at
// once, and, from the store's own history, that every write signed by a
// replica was accepted while that replica owned the key's bucket (the
// bucket's owner record named it, in its current membership term).
type detector struct {
	t       *testing.T
	opts    Options
	mu      sync.Mutex
	in      map[string]string
	acts    int
	writes  int
	refused int // writes refused with ErrGuardFailed (deposed owners)
	stop    func()
	done    chan struct{}
}

func newDetector(t *testing.T, raw *store.Memory[[]byte], opts Options, history bool) *detector {
	d := &detector{t: t, opts: opts, in: map[string]string{}, done: make(chan struct{})}
	if !history {
		d.stop = func() {}
		return d
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.stop = func() { cancel(); <-d.done }
	w, err := raw.Watch(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	go d.check(w)
	return d
}

func (d *detector) enter(key, id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.acts++
	if other, ok := d.in[key]; ok {
		d.t.Errorf("key %s reconciled by %s while %s reconciles it", key, id, other)
	}
	d.in[key] = id
}

func (d *detector) exit(key, id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.in[key] == id {
		delete(d.in, key)
	}
}

// check follows the store's history in revision order.
func (d *detector) check(w store.Watcher[[]byte]) {
	defer close(d.done)
	defer w.Stop()
	k := keys{prefix: d.opts.Prefix}
	if k.prefix == "" {
		k.prefix = DefaultPrefix
	}
	owners := map[int]ownerRecord{}
	terms := map[string]int64{}
	ownerCodec, itemCodec := store.JSON[ownerRecord]{}, store.JSON[*item]{}
	for ev := range w.Events() {
		key := ev.Object.Key
		switch {
		case len(key) > len(k.members()) && key[:len(k.members())] == k.members():
			if ev.Type == store.Deleted {
				delete(terms, k.memberID(key))
			} else {
				terms[k.memberID(key)] = ev.Object.CreateRevision
			}
		case len(key) > len(k.owners()) && key[:len(k.owners())] == k.owners():
			b, ok := k.ownerBucket(key, d.opts.Buckets)
			if !ok || ev.Type == store.Deleted {
				continue
			}
			o, err := ownerCodec.Unmarshal(ev.Object.Value)
			if err != nil {
				d.t.Errorf("owner record %s: %v", key, err)
			}
			owners[b] = o
		case len(key) > 6 && key[:6] == "items/" && ev.Type != store.Deleted:
			v, err := itemCodec.Unmarshal(ev.Object.Value)
			if err != nil || v.By == "" {
				continue
			}
			d.mu.Lock()
			d.writes++
			d.mu.Unlock()
			b := Bucket(key, d.opts.Buckets)
			o := owners[b]
			if o.Owner != v.By || terms[v.By] != o.Term || o.Term == 0 {
				d.t.Errorf("write of %s by %s accepted at revision %d while bucket %d's owner is %q (term %d; %s's term %d)",
					key, v.By, ev.Object.Revision, b, o.Owner, o.Term, v.By, terms[v.By])
			}
		}
	}
	if err := w.Err(); err != nil && !errors.Is(err, context.Canceled) {
		d.t.Errorf("history watch ended: %v", err)
	}
}
