package etcdtest

import (
	"testing"
	"time"

	"github.com/converge-go/converge/examples/internal/etcdflag"
	"github.com/converge-go/converge/internal/testcerts"
	"github.com/converge-go/converge/store/etcdstore/etcdprocs"
)

// External starts an etcd server process that requires client
// certificates (StartTLSProcess, with certificates testcerts.Write
// makes), stopped at t's cleanup, and returns the flags that reach it as
// -etcd and the TLS flags would: for tests of a program run against a
// cluster it did not start. It fails t if the server cannot be built or
// started.
func External(t testing.TB) etcdflag.Flags {
	t.Helper()
	certs, err := testcerts.Write(t.TempDir())
	if err != nil {
		t.Fatalf("etcdtest: certificates: %v", err)
	}
	bin, err := etcdprocs.Build(t.TempDir())
	if err != nil {
		t.Fatalf("etcdtest: build etcd: %v", err)
	}
	member, err := StartTLSProcess(t.Context(), bin, t.TempDir(), certs, 30*time.Second)
	if err != nil {
		t.Fatalf("etcdtest: start etcd: %v", err)
	}
	t.Cleanup(member.Stop)
	return etcdflag.Flags{Endpoints: member.Endpoint, CACert: certs.CA, Cert: certs.ClientCert, Key: certs.ClientKey}
}
