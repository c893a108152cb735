package etcdstore_test

import (
	"context"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
	"github.com/stretchr/testify/require"
	"go.etcd.io/etcd/server/v3/embed"
)

// restartable is a one-member embedded cluster on fixed loopback ports and
// a fixed directory, so that it can be stopped and started again as the
// same member.
type restartable struct {
	t            *testing.T
	dir          string
	client, peer url.URL
	m            *member
}

func startRestartable(t *testing.T) *restartable {
	addrs := freePorts(t, 2)
	r := &restartable{
		t:      t,
		dir:    t.TempDir(),
		client: url.URL{Scheme: "http", Host: addrs[0]},
		peer:   url.URL{Scheme: "http", Host: addrs[1]},
	}
	r.Start()
	return r
}

func (r *restartable) config() *embed.Config {
	cfg := memberConfig("solo", r.dir)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{r.client}, []url.URL{r.client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{r.peer}, []url.URL{r.peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	return cfg
}

// Start starts the member and waits until it is ready.
func (r *restartable) Start() {
	r.t.Helper()
	r.m = start(r.t, r.config())
	waitReady(r.t, r.m)
}

// Stop stops the member.
func (r *restartable) Stop() { r.m.Stop() }

func (r *restartable) Endpoint() string { return r.client.String() }

// silence is how long the outage test watches a silent watch to show that
// it stays silent: an observation window, not a bound the code must meet.
const silence = time.Second

// TestOutageOfTheOnlyMemberIsDetectable: with the only member stopped, the
// watch stays open (etcd's client keeps trying to reconnect) but a
// progress request goes unanswered, Revision with a deadline fails with
// store.ErrUnavailable at the deadline, and a new Watch fails with
// store.ErrUnavailable within its open timeout instead of returning a watch
// that does not exist. Once the member is back, the open watch answers
// the request and resumes, and a new watch from the last revision seen
// delivers the changes made since, none lost, none repeated.
func TestOutageOfTheOnlyMemberIsDetectable(t *testing.T) {
	r := startRestartable(t)
	client := newClient(t, nil, r.Endpoint())
	ctx := t.Context()
	const openTimeout = 500 * time.Millisecond
	s := newStore(t, client, "app/", etcdstore.WithWatchOpenTimeout(openTimeout))
	start, err := s.Revision(ctx)
	require.NoError(t, err)
	w, err := s.Watch(ctx, "", start)
	require.NoError(t, err)
	defer w.Stop()
	a, err := s.Create(ctx, "a", &item{N: 1})
	require.NoError(t, err)
	require.Equal(t, a, nextEvent(t, w).Object)

	r.Stop()
	requestProgress(t, w)
	quiet := time.NewTimer(silence)
	defer quiet.Stop()
	select {
	case ev, ok := <-w.Events():
		if ok {
			t.Fatalf("a watch whose only member is down delivered %v at revision %d", ev.Type, ev.Object.Revision)
		}
		require.ErrorIs(t, w.Err(), store.ErrUnavailable, "a watch that ends in an outage")
	case <-quiet.C:
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = s.Revision(short)
	cancel()
	require.ErrorIs(t, err, store.ErrUnavailable, "Revision with a deadline")
	_, err = s.Watch(ctx, "", a.Revision)
	require.ErrorIs(t, err, store.ErrUnavailable, "Watch during the outage")

	r.Start()
	var b store.Object[*item]
	require.Eventually(t, func() bool {
		actx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		b, err = s.Create(actx, "b", &item{N: 2})
		return err == nil
	}, patience, 10*time.Millisecond, "the store serves again")

	// The open watch, if it stayed open, resumes and answers.
	if !errors.Is(w.Err(), store.ErrUnavailable) {
		evs, p := untilProgress(t, w)
		require.Equal(t, []store.Event[*item]{{Type: store.Created, Object: b}}, evs, "the open watch resumes without a loss or a repeat")
		require.GreaterOrEqual(t, p.Object.Revision, b.Revision)
	}
	var w2 store.Watcher[*item]
	require.Eventually(t, func() bool {
		w2, err = s.Watch(ctx, "", a.Revision)
		return err == nil
	}, patience, 10*time.Millisecond, "a watch opens again")
	defer w2.Stop()
	requestProgress(t, w2)
	evs, _ := untilProgress(t, w2)
	require.Equal(t, []store.Event[*item]{{Type: store.Created, Object: b}}, evs, "a new watch resumes without a loss or a repeat")
}
