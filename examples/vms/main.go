// Command vms is an operator of virtual machines written only with
// converge's external-resource kit (reconcile/kit/external). Its domain,
// the whole of what its author wrote about VMs, is in reconciler.go:
// observe, create, resize and delete a VM, and list the VMs it tagged;
// main.go only wires, and demo.go tells the story.
//
// The VMs live behind an HTTP API (vmapi.go, served in process) that has
// no idempotency key: every POST makes a new VM. So a create whose answer
// is lost must not be made again blindly. The kit records the create's
// ID in the resource's status before the POST, the VM carries it in a
// tag, and after a failure the next reconcile finds the VM by its tag and
// adopts it: no duplicate, and no person asked. The demo shows it, with
// a resize, a VM deleted by hand and put back (drift), a deletion
// through the finalizer, and a VM tagged for a key nobody wants pruned.
//
// Run it from the repository root:
//
//	go run ./examples/vms
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/converge-go/converge/reconcile"
	"github.com/converge-go/converge/reconcile/dependency"
	"github.com/converge-go/converge/reconcile/kit/drift"
	"github.com/converge-go/converge/reconcile/kit/external"
	"github.com/converge-go/converge/reconcile/kit/prune"
	"github.com/converge-go/converge/reconcile/kit/resource"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/apistore"
)

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := run(ctx, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "vms:", err)
		os.Exit(1)
	}
}

// operator is what run wires: the API, the store, and the controller and
// pruner of the VMs.
type operator struct {
	api *vmAPI
	s   store.Store[*VM]
	c   *reconcile.Controller[*VM]
	p   *prune.Pruner[*VM]
}

// wire serves the VM API on a loopback port and builds the operator.
func wire(ctx context.Context) (*operator, error) {
	api := newVMAPI()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	client := &vms{base: "http://" + ln.Addr().String(), http: &http.Client{Timeout: 5 * time.Second}}
	return newOperator(api, client, store.NewMemory[*VM](), nil)
}

// newOperator builds the operator of the VMs client reaches (served by
// api), over raw through the API-server layer, its controller reporting
// to metrics (nil: none).
func newOperator(api *vmAPI, client *vms, raw store.Store[*VM], metrics reconcile.Metrics) (*operator, error) {
	s, err := apistore.New(raw, resource.Kind[VMSpec, VMStatus]{},
		apistore.WithAdmission("vms/", admission()))
	if err != nil {
		return nil, err
	}
	apiDep := &dependency.Dependency{Name: "vm-api", Interval: 200 * time.Millisecond, Check: func(ctx context.Context) error {
		_, err := client.list(ctx)
		return err
	}}
	kit, err := external.New(s, client.world(), external.Options[VMSpec, VMStatus]{
		Name: owner, Prefix: "vms/",
		Record:     func(st *VMStatus) *external.Record { return &st.External },
		Dependency: apiDep,
		Classify: func(err error) external.Class {
			if errors.Is(err, errUnreachable) {
				return external.Down
			}
			return external.Transient
		},
		Drift: drift.Options{Interval: 200 * time.Millisecond},
		Prune: prune.Options{Interval: time.Hour},
	})
	if err != nil {
		return nil, err
	}
	c, err := reconcile.New(s, kit, reconcile.Options[*VM]{Name: "vms", Prefix: "vms/",
		Sources: kit.Sources(), Dependencies: kit.Dependencies(), Metrics: metrics})
	if err != nil {
		return nil, err
	}
	p, err := kit.Pruner(c)
	if err != nil {
		return nil, err
	}
	return &operator{api: api, s: s, c: c, p: p}, nil
}

// run wires the operator, runs it and plays the demo on out.
func run(ctx context.Context, out io.Writer) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	op, err := wire(ctx)
	if err != nil {
		return err
	}
	done := make(chan error, 2)
	go func() { done <- op.c.Run(ctx) }()
	go func() { done <- op.p.Run(ctx) }()
	err = op.demo(ctx, out)
	cancel()
	return errors.Join(err, <-done, <-done)
}
