package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/replicaset/controller"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store/apistore"
	"github.com/converge-go/converge/store/boltstore"
	"github.com/converge-go/converge/store/changelog"
	"github.com/converge-go/converge/store/faultstore"
)

// storePlaces are where the demo's store lives: its bbolt file, and the
// directory of its change log beside it, which also holds the snapshot
// each epoch of the log begins with (changelog.Options.SnapshotDir).
type storePlaces struct {
	path, logDir string
	// insecure accepts a log directory others may change
	// (Config.InsecurePermissions).
	insecure bool
	logger   *slog.Logger
}

// demoStore is the demo's store and what reaches it: the bbolt file (db);
// the network to it (net, a fault store, which injects nothing until an
// outage cuts it); the API-server layer over the network (api: finalizers,
// generation and status; the controller's and the user's way to the
// store); the narrator, which reads db directly, so that it sees what is
// stored even while the network is cut; and the shipper, which ships every
// change of db to the change log, as a store server beside its file would.
// The disk-loss step closes one and opens another on the file restored
// from the log.
type demoStore struct {
	db       *boltstore.Store[*controller.ReplicaSet]
	net      *faultstore.Store[*controller.ReplicaSet]
	api      *apistore.Store[*controller.ReplicaSet]
	narrator *storeNarrator
	shipper  *changelog.Shipper[*controller.ReplicaSet]
	// identity is db's (store.Identifier).
	identity string
	// cancel stops the narrator and the shipper, whose ends done
	// receives; closed is set once close has run.
	cancel context.CancelFunc
	done   chan error
	closed bool
}

// openStore opens the bbolt file at pl.path, creating it if need be, with
// the layers over it, and starts the narrator and the shipper until close.
// fail is called if either fails before close: it ends the scenario.
func openStore(ctx context.Context, pl storePlaces, say *demo.Narrator, fail func()) (*demoStore, error) {
	db, err := boltstore.Open[*controller.ReplicaSet](pl.path)
	if err != nil {
		return nil, err
	}
	st := &demoStore{db: db, narrator: &storeNarrator{say: say, s: db}, done: make(chan error, 2)}
	if err := st.layer(ctx, pl); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	ctx, st.cancel = context.WithCancel(ctx)
	run := func(what string, f func(context.Context) error) {
		err := f(ctx)
		switch {
		case ctx.Err() == nil:
			err = errors.Join(err, fmt.Errorf("%s stopped", what))
			fail()
		case errors.Is(err, ctx.Err()):
			err = nil // stopped by close, wherever it was
		}
		st.done <- err
	}
	go run("the narrator", st.narrator.run)
	go run("the change log's shipper", st.shipper.Run)
	return st, nil
}

// layer makes the layers over db and its shipper.
func (st *demoStore) layer(ctx context.Context, pl storePlaces) (err error) {
	if st.identity, err = st.db.Identity(ctx); err != nil {
		return err
	}
	if st.net, err = faultstore.New[*controller.ReplicaSet](st.db, faultstore.Options{}); err != nil {
		return err
	}
	if st.api, err = apistore.New(st.net, resource.Kind[controller.Spec, controller.Status]{},
		apistore.WithAdmission("", controller.Admission())); err != nil {
		return err
	}
	st.shipper, err = changelog.NewShipper(st.db, nil, changelog.Options{Dir: pl.logDir, InsecurePermissions: pl.insecure, Logger: pl.logger})
	return err
}

// close stops the narrator and the shipper, which syncs what it shipped,
// then closes db. It returns their errors; called again, it does nothing.
func (st *demoStore) close() error {
	if st.closed {
		return nil
	}
	st.closed = true
	st.cancel()
	err := errors.Join(<-st.done, <-st.done)
	return errors.Join(err, st.db.Close())
}
