package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore"
)

// narrator writes the demo's story, one line per event stamped with the
// time since the demo started (demo.Narrator), and remembers the last
// version of each job it narrated. It is safe for concurrent use.
type narrator struct {
	*demo.Narrator

	mu   sync.Mutex
	jobs map[string]*Job
}

func newNarrator(out io.Writer) *narrator {
	return &narrator{Narrator: demo.NewNarrator(out), jobs: make(map[string]*Job)}
}

// last returns the last narrated version of job name, or nil.
func (n *narrator) last(name string) *Job {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.jobs[name]
}

// following is a watch of a daemon's store being narrated.
type following struct {
	cancel context.CancelFunc
	done   chan struct{}
	rev    int64 // the last revision narrated, once done is closed
}

// stop ends the watch and returns the last revision it narrated, from
// which the next daemon's store is followed.
func (f *following) stop() int64 {
	f.cancel()
	<-f.done
	return f.rev
}

// follow narrates every change of the jobs in the store at url after
// revision after, until stopped. It reads the store as any client does,
// with token.
func (n *narrator) follow(ctx context.Context, url, token string, after int64) *following {
	ctx, cancel := context.WithCancel(ctx)
	f := &following{cancel: cancel, done: make(chan struct{}), rev: after}
	go func() {
		defer close(f.done)
		c, err := httpstore.New[*Job](url, httpstore.WithToken(token))
		if err != nil {
			n.Say("narrator: %v", err)
			return
		}
		defer c.Close()
		w, err := c.Watch(ctx, KeyPrefix, after)
		if err != nil {
			if ctx.Err() == nil {
				n.Say("narrator: %v", err)
			}
			return
		}
		defer w.Stop()
		for ev := range w.Events() {
			if ev.Type == store.Progress {
				continue
			}
			n.change(ev)
			f.rev = ev.Object.Revision
		}
	}()
	return f
}

// change narrates one change of a job.
func (n *narrator) change(ev store.Event[*Job]) {
	name := strings.TrimPrefix(ev.Object.Key, KeyPrefix)
	cur := ev.Object.Value
	n.mu.Lock()
	old := n.jobs[name]
	n.jobs[name] = cur
	n.mu.Unlock()
	switch {
	case ev.Type == store.Deleted:
		n.Say("%-7s deleted", name)
	case old == nil && cur.Status.Phase == "":
		spec := cur.Spec
		extra := fmt.Sprintf("retries %d", spec.Retries)
		if spec.Timeout > 0 {
			extra += fmt.Sprintf(", timeout %v", time.Duration(spec.Timeout))
		}
		n.Say("%-7s added: %s (%s)", name, strings.Join(append([]string{spec.Command}, spec.Args...), " "), extra)
	case old == nil || old.Status.Phase != cur.Status.Phase || old.Status.Message != cur.Status.Message:
		n.Say("%-7s %-9s %s", name, cur.Status.Phase, cur.Status.Message)
	}
}
