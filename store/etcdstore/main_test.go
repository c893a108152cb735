package etcdstore_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// item is the value type of the package's own tests.
type item struct {
	N int    `json:"n"`
	S string `json:"s"`
}
