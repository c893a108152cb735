package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/converge-go/converge/examples/internal/etcdflag"
	"github.com/converge-go/converge/examples/internal/pods"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/lock"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/reconcile/manager"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/faultstore"
)

// replica is one replica of the replicated controller, as a separate
// process would run it: its own etcd client, a lease on the prefix shared
// with the replica sets, an elector, and a manager that runs the replica set
// controller while the elector leads. The pods are not the replica's: they
// belong to the supervisor all replicas share, as pods belong to the
// machine they run on, so that a new leader adopts what the old one started.
type replica struct {
	name   string
	client *clientv3.Client
	mgr    *manager.Manager

	closeClient func() error // closes client once
	// cutOff cuts the replica off from etcd: a loud outage of both its
	// stores, so every call fails at once, as if its process were gone.
	// (Closing the etcd client alone would not do: the client retries a
	// call on a closed connection for seconds before it fails.)
	cutOff   func()
	cancel   context.CancelFunc
	done     chan error // receives Run's result
	stopOnce sync.Once
	stopErr  error
}

// replicaDeps is what the replicas share.
type replicaDeps struct {
	etcd  *etcdflag.Etcd
	ttl   time.Duration
	pods  *pods.Supervisor
	terms *terms
	// wrote hears each status write of a replica's controller, with the
	// token of the term it was made in.
	wrote  func(replica string, token int64, obj store.Object[*controller.ReplicaSet])
	logger *slog.Logger
}

// newReplica connects replica name to etcd and builds its manager.
func newReplica(name string, d replicaDeps) (r *replica, err error) {
	client, err := d.etcd.Client()
	if err != nil {
		return nil, err
	}
	r = &replica{name: name, client: client, closeClient: sync.OnceValue(client.Close), done: make(chan error, 1)}
	defer func() {
		if err != nil {
			_ = r.closeClient()
		}
	}()
	log := d.logger.With("replica", name)

	leases, objects, err := replicaStores(client)
	if err != nil {
		return nil, err
	}
	r.cutOff = func() {
		leases.SetOutage(faultstore.Loud)
		objects.SetOutage(faultstore.Loud)
	}
	lease, err := lock.NewLease(leases, leaseKey, lock.LeaseOptions{Holder: name, TTL: d.ttl, Logger: log})
	if err != nil {
		return nil, err
	}
	elector, err := lock.NewElector(&termLocker{Locker: lease, replica: name, terms: d.terms}, lock.ElectorOptions{Logger: log})
	if err != nil {
		return nil, err
	}
	// The controller's writes need no wrapper: it writes through itself
	// (Request.Store), which adds the guard of the term the elector runs it
	// in to each write.
	// The API-server layer over the objects: a deletion of a replica set
	// marks it until the controller has stopped its pods (its finalizer).
	layer, err := apistore.New[*controller.ReplicaSet](objects, resource.Kind[controller.Spec, controller.Status]{},
		apistore.WithAdmission(rsPrefix, controller.Admission()))
	if err != nil {
		return nil, err
	}
	ctrl, err := controller.New(layer, controller.Config{
		Pods:   d.pods,
		Exits:  d.pods.Exits(),
		Logger: log,
		Prefix: rsPrefix,
		StatusWritten: func(ctx context.Context, obj store.Object[*controller.ReplicaSet]) {
			var token int64
			if lk, ok := lock.FromContext(ctx); ok {
				token = lk.Token()
			}
			d.wrote(name, token, obj)
		},
	})
	if err != nil {
		return nil, err
	}
	if !ctrl.NeedsLeaderElection() {
		return nil, errors.New("the replica set controller is not leader-only")
	}
	r.mgr, err = manager.New(manager.Options{Logger: log, Elector: elector, ShutdownTimeout: 10 * time.Second})
	if err != nil {
		return nil, err
	}
	if err := r.mgr.Add(ctrl); err != nil {
		return nil, err
	}
	return r, nil
}

// replicaStores returns a replica's stores over client: its lease record
// and the replica sets, each through a fault store that cuts the replica
// off when it crashes. They share one etcd prefix, so the lease's guard is
// a compare etcd checks in each replica set write the controller makes
// while the replica leads.
func replicaStores(client *clientv3.Client) (*faultstore.Store[lock.Record], *faultstore.Store[*controller.ReplicaSet], error) {
	rawLeases, err := etcdstore.New[lock.Record](client, etcdPrefix)
	if err != nil {
		return nil, nil, err
	}
	rawObjects, err := etcdstore.New[*controller.ReplicaSet](client, etcdPrefix)
	if err != nil {
		return nil, nil, err
	}
	leases, err := faultstore.New(rawLeases, faultstore.Options{})
	if err != nil {
		return nil, nil, err
	}
	objects, err := faultstore.New(rawObjects, faultstore.Options{})
	if err != nil {
		return nil, nil, err
	}
	return leases, objects, nil
}

// start runs the replica's manager until crash or stop.
func (r *replica) start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(ctx)
	go func() { r.done <- r.mgr.Run(ctx) }()
}

// crash ends the replica as a crash would: first every store call it makes
// fails at once, so its lease is neither renewed nor released (the
// elector's attempt to release it fails) and nothing it writes reaches
// etcd; then its manager stops and its client closes. The lease record stays
// in etcd until the others take it over after the TTL. It returns once the
// manager has stopped.
func (r *replica) crash() error {
	return r.shutdown(true)
}

// stop stops the replica cleanly: its manager stops and, if it leads,
// releases the lease; then its client closes. It may be called more than
// once, and after crash.
func (r *replica) stop() error {
	return r.shutdown(false)
}

func (r *replica) shutdown(crash bool) error {
	r.stopOnce.Do(func() {
		if crash {
			r.cutOff()
		}
		var runErr error
		if r.cancel != nil {
			r.cancel()
			runErr = <-r.done
		}
		closeErr := r.closeClient()
		if runErr != nil {
			runErr = fmt.Errorf("%s: manager: %w", r.name, runErr)
		}
		if closeErr != nil {
			closeErr = fmt.Errorf("%s: close etcd client: %w", r.name, closeErr)
		}
		r.stopErr = errors.Join(runErr, closeErr)
	})
	return r.stopErr
}
