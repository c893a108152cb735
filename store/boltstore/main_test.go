package boltstore_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/converge-go/converge/store/boltstore"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The crash test's child process runs a writer until it is killed; it
	// must not run the leak check (nor anything else).
	if os.Getenv(crashHelperEnv) != "" || os.Getenv(lockHelperEnv) != "" {
		os.Exit(m.Run())
	}
	goleak.VerifyTestMain(m)
}

// item is the value type of the package's own tests.
type item struct {
	N int    `json:"n"`
	S string `json:"s"`
}

// openTemp opens a store in a new file under t.TempDir, closed at cleanup.
func openTemp(t *testing.T, opts ...boltstore.Option) (*boltstore.Store[*item], string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "store.db")
	return openAt(t, path, opts...), path
}

// openAt opens the store at path, closed at cleanup unless closed before.
func openAt(t *testing.T, path string, opts ...boltstore.Option) *boltstore.Store[*item] {
	t.Helper()
	s, err := boltstore.Open[*item](path, opts...)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
