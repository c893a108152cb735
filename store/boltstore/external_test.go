package boltstore_test

import (
	"path/filepath"
	"testing"

	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
)

// TestTheExternalKitsCrashClausesHoldOverBolt runs the external kit's
// crash suite over bolt, a fresh file per trial.
func TestTheExternalKitsCrashClausesHoldOverBolt(t *testing.T) {
	externaltest.Run(t, func(t *testing.T) store.Store[*externaltest.SuiteResource] {
		s, err := boltstore.Open[*externaltest.SuiteResource](filepath.Join(t.TempDir(), "store.db"))
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}
