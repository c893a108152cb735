package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/converge-go/converge/store/etcdstore/etcdembed"
	"github.com/converge-go/converge/store/httpstore"
	"go.etcd.io/etcd/server/v3/embed"
)

// LoadTarget is one backend of the load benchmark. Open starts a fresh one
// with its files under dir (a directory the caller owns and removes) and
// returns the store the clients and watchers use and a function that stops
// everything Open started.
type LoadTarget struct {
	Name string
	What string
	Open func(dir string) (store.Store[LoadValue], func() error, error)
}

// LoadTargets returns every target, in table order: the HTTP store over
// bolt and etcdstore over an embedded etcd (the comparison), then HTTP
// over memory and bolt called directly (context).
func LoadTargets() []LoadTarget {
	return []LoadTarget{
		{"http-bolt", "httpstore client → loopback TCP → httpstore.NewServer → boltstore (fsync per commit)", openHTTPBolt},
		{"etcd", "etcdstore → gRPC on loopback → embedded etcd (etcdembed: no fsync)", openEtcd},
		{"etcd-fsync", "as etcd, with etcdembed's configuration but fsync on (as bolt)", openEtcdFsync},
		{"http-bolt-tmpfs", "as http-bolt, with the bolt file on tmpfs (/dev/shm: fsync costs nothing)", openHTTPBoltTmpfs},
		{"http-memory", "httpstore client → loopback TCP → httpstore.NewServer → store.NewMemory", openHTTPMemory},
		{"bolt", "boltstore called in-process (fsync per commit)", openBolt},
	}
}

// LoadTargetByName returns the target called name.
func LoadTargetByName(name string) (LoadTarget, error) {
	for _, t := range LoadTargets() {
		if t.Name == name {
			return t, nil
		}
	}
	return LoadTarget{}, fmt.Errorf("bench: no load target %q", name)
}

func openBoltStore(dir string) (*boltstore.Store[LoadValue], error) {
	s, err := boltstore.Open[LoadValue](filepath.Join(dir, "load.db"))
	if err != nil {
		return nil, fmt.Errorf("bench: bolt: %w", err)
	}
	return s, nil
}

func openBolt(dir string) (store.Store[LoadValue], func() error, error) {
	s, err := openBoltStore(dir)
	if err != nil {
		return nil, nil, err
	}
	return s, s.Close, nil
}

func openHTTPBolt(dir string) (store.Store[LoadValue], func() error, error) {
	s, err := openBoltStore(dir)
	if err != nil {
		return nil, nil, err
	}
	c, stop, err := serveHTTP(s)
	if err != nil {
		return nil, nil, errors.Join(err, s.Close())
	}
	return c, func() error { return errors.Join(stop(), s.Close()) }, nil
}

// openHTTPBoltTmpfs is openHTTPBolt with its directory on /dev/shm (Linux
// tmpfs), removed by the returned stop function.
func openHTTPBoltTmpfs(string) (store.Store[LoadValue], func() error, error) {
	dir, err := os.MkdirTemp("/dev/shm", "httpload-")
	if err != nil {
		return nil, nil, fmt.Errorf("bench: tmpfs: %w", err)
	}
	s, stop, err := openHTTPBolt(dir)
	if err != nil {
		return nil, nil, errors.Join(err, os.RemoveAll(dir))
	}
	return s, func() error { return errors.Join(stop(), os.RemoveAll(dir)) }, nil
}

// loadMemoryHistory keeps every revision of a run in the memory store, so
// that a watch resumed after lagging never finds its history gone.
const loadMemoryHistory = 4 << 20

func openHTTPMemory(string) (store.Store[LoadValue], func() error, error) {
	s := store.NewMemory[LoadValue](store.WithHistory(loadMemoryHistory), store.WithWatchLag(store.DefaultWatchLag))
	c, stop, err := serveHTTP(s)
	if err != nil {
		s.Close()
		return nil, nil, err
	}
	return c, func() error { err := stop(); s.Close(); return err }, nil
}

// serveHTTP serves s with httpstore's handler on a loopback port, through
// a server with NewServer's timeouts and limits, and returns a client of it
// and a function that closes the client's connections and shuts the server
// down.
func serveHTTP(s store.Store[LoadValue]) (store.Store[LoadValue], func() error, error) {
	h, err := httpstore.NewHandler[LoadValue](s)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: handler: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, fmt.Errorf("bench: listen: %w", err)
	}
	srv := httpstore.NewServer(ln.Addr().String(), h)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	c, err := httpstore.New[LoadValue]("http://" + ln.Addr().String())
	stop := func() error {
		if c != nil {
			_ = c.Close()
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err := srv.Shutdown(ctx)
		if serr := <-served; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	}
	if err != nil {
		return nil, nil, errors.Join(fmt.Errorf("bench: client: %w", err), stop())
	}
	return c, stop, nil
}

func openEtcd(dir string) (store.Store[LoadValue], func() error, error) {
	e, err := etcdembed.Start(dir)
	if err != nil {
		return nil, nil, err
	}
	return etcdTarget(e)
}

// openEtcdFsync starts etcdembed's configuration with fsync turned back
// on, so that etcd pays for durability as bolt does.
func openEtcdFsync(dir string) (store.Store[LoadValue], func() error, error) {
	cfg := etcdembed.Config("converge", dir)
	cfg.UnsafeNoFsync = false
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("bench: etcd: %w", err)
	}
	if err := etcdembed.WaitReady(e, 30*time.Second); err != nil {
		e.Close()
		return nil, nil, err
	}
	return etcdTarget(e)
}

// etcdTarget returns an etcdstore over a client of e, and a function that
// closes the client and then e.
func etcdTarget(e *embed.Etcd) (store.Store[LoadValue], func() error, error) {
	cli, err := etcdembed.NewClient(etcdembed.Endpoint(e))
	if err != nil {
		e.Close()
		return nil, nil, err
	}
	stop := func() error {
		err := cli.Close()
		e.Close()
		return err
	}
	s, err := etcdstore.New[LoadValue](cli, "converge/")
	if err != nil {
		return nil, nil, errors.Join(err, stop())
	}
	return s, stop, nil
}
