package etcdstore_test

import (
	"fmt"
	"testing"

	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/etcdstore"
)

// TestTheExternalKitsCrashClausesHoldOverEtcd runs the external kit's
// crash suite over etcd, one embedded member for the run and a fresh
// prefix per trial.
func TestTheExternalKitsCrashClausesHoldOverEtcd(t *testing.T) {
	client := newClient(t, nil, startServer(t, nil).Endpoint())
	n := 0
	externaltest.Run(t, func(t *testing.T) store.Store[*externaltest.SuiteResource] {
		n++
		s, err := etcdstore.New[*externaltest.SuiteResource](client, fmt.Sprintf("external/%d/", n))
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return s
	})
}
