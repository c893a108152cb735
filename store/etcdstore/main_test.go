package etcdstore_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that no goroutine outlives the tests, with one narrow
// exception: the HTTP connections between the members of an embedded
// cluster. A member's close shuts its peer HTTP server down without forcing
// its active connections closed; each ends by itself within etcd's peer
// read timeout (5 s) after the last member closes. The package itself opens
// no HTTP connection, so ignoring net/http's connection goroutines hides
// none of its own. The etcd binary that the process tests build is
// removed at the end.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreAnyFunction("net/http.(*conn).serve"),
		goleak.IgnoreAnyFunction("net/http.(*connReader).backgroundRead"),
		goleak.Cleanup(func(int) { removeEtcdBinary() }),
	)
}

// item is the value type of the package's own tests.
type item struct {
	N int    `json:"n"`
	S string `json:"s"`
}
