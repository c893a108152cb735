package external_test

import (
	"testing"

	"github.com/converge-go/converge/reconcile/kit/external/externaltest"
	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/httpstore/httpstoretest"
)

// TestTheCrashClausesHoldOverMemoryAndHTTP runs externaltest's suite (the
// crash clauses of the package doc) over the in-memory store and over a
// client of a served one; store/boltstore and store/etcdstore run it too.
func TestTheCrashClausesHoldOverMemoryAndHTTP(t *testing.T) {
	t.Run("memory", func(t *testing.T) {
		externaltest.Run(t, func(t *testing.T) store.Store[*externaltest.SuiteResource] {
			m := store.NewMemory[*externaltest.SuiteResource]()
			t.Cleanup(func() { _ = m.Close() })
			return m
		})
	})
	t.Run("http", func(t *testing.T) {
		externaltest.Run(t, func(t *testing.T) store.Store[*externaltest.SuiteResource] {
			m := store.NewMemory[*externaltest.SuiteResource]()
			t.Cleanup(func() { _ = m.Close() })
			return httpstoretest.Serve(t, store.Store[*externaltest.SuiteResource](m), httpstoretest.Options{})
		})
	})
}
