package store_test

import (
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.RunWith(t, func(t *testing.T) store.Store[*storetest.Value] {
		s := store.NewMemory[*storetest.Value]()
		t.Cleanup(func() { s.Close() })
		return s
	}, storetest.Options{RecordsCauses: true})
}
