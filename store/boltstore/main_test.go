package boltstore_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/converge-go/converge/store/boltstore"
	"go.uber.org/goleak"
)

// TestMain runs the tests under a leak check, unless the binary was started
// as a test's child process (os.Args[0] with one of the helper variables
// set): then it runs that helper instead of any test, and exits with its
// status. The helpers are no Test functions, so they never show up as tests
// that pass doing nothing.
func TestMain(m *testing.M) {
	if path := os.Getenv(crashHelperEnv); path != "" {
		os.Exit(crashWriter(path))
	}
	if dir := os.Getenv(checkpointHelperEnv); dir != "" {
		os.Exit(checkpointController(dir))
	}
	if path := os.Getenv(lockHelperEnv); path != "" {
		os.Exit(lockProbe(path))
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
