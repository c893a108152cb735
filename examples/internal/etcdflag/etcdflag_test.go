package etcdflag_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/converge-go/converge/examples/internal/etcdflag"
	"github.com/converge-go/converge/examples/internal/etcdflag/etcdtest"
	"github.com/converge-go/converge/internal/privatefile"
	"github.com/converge-go/converge/internal/testcerts"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// roundTrip writes and reads a key through a client of e.
func roundTrip(ctx context.Context, e *etcdflag.Etcd) error {
	cli, err := e.Client()
	if err != nil {
		return err
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if _, err := cli.Put(ctx, "etcdflag", "ok"); err != nil {
		return err
	}
	got, err := cli.Get(ctx, "etcdflag")
	if err != nil {
		return err
	}
	if len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "ok" {
		return fmt.Errorf("read back %v", got.Kvs)
	}
	return nil
}

// Without -etcd, Open starts an embedded member and hands out its
// endpoint for other processes; Close stops it.
func TestWithoutEndpointsOpenStartsAnEmbeddedMemberThatServes(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := etcdflag.Register(fs)
	require.NoError(t, fs.Parse(nil))
	e, err := etcdflag.Open(*f, t.TempDir())
	require.NoError(t, err)
	defer e.Close()
	assert.True(t, e.Embedded())
	require.Len(t, e.Endpoints(), 1)
	assert.Equal(t, []string{"-etcd=" + e.Endpoints()[0]}, e.Flags().Args())
	require.NoError(t, roundTrip(t.Context(), e))
}

// With -etcd and the TLS flags, clients reach an existing member that
// requires client certificates signed by its CA; without the client
// certificate, or without the CA, the same member refuses them.
func TestExistingClusterOverMutualTLS(t *testing.T) {
	dir := t.TempDir()
	certs, err := testcerts.Write(dir)
	require.NoError(t, err)
	member, endpoint, err := etcdtest.StartTLS(t.TempDir(), certs)
	require.NoError(t, err)
	defer member.Close()

	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := etcdflag.Register(fs)
	args := []string{"-etcd", endpoint, "-etcd-cacert", certs.CA, "-etcd-cert", certs.ClientCert, "-etcd-key", certs.ClientKey}
	require.NoError(t, fs.Parse(args))
	e, err := etcdflag.Open(*f, t.TempDir())
	require.NoError(t, err)
	defer e.Close()
	assert.False(t, e.Embedded())
	require.NoError(t, roundTrip(t.Context(), e))

	// A child given Args reaches the same cluster the same way.
	again := flag.NewFlagSet("child", flag.ContinueOnError)
	g := etcdflag.Register(again)
	require.NoError(t, again.Parse(e.Flags().Args()))
	assert.Equal(t, *f, *g)

	for name, bad := range map[string]etcdflag.Flags{
		"no client certificate": {Endpoints: endpoint, CACert: certs.CA},
		"server not trusted":    {Endpoints: endpoint, Cert: certs.ClientCert, Key: certs.ClientKey},
	} {
		e, err := etcdflag.Open(bad, t.TempDir())
		require.NoError(t, err, name)
		assert.Error(t, roundTrip(t.Context(), e), name)
		e.Close()
	}
}

// Flags that cannot work are refused with ErrInvalid before anything is
// dialled or started.
func TestUnusableTLSFlagsAreInvalid(t *testing.T) {
	certs, err := testcerts.Write(t.TempDir())
	require.NoError(t, err)
	for name, f := range map[string]etcdflag.Flags{
		"cert without key":        {Endpoints: "127.0.0.1:1", Cert: certs.ClientCert},
		"key without cert":        {Endpoints: "127.0.0.1:1", Key: certs.ClientKey},
		"missing CA file":         {Endpoints: "127.0.0.1:1", CACert: certs.CA + ".missing"},
		"CA file without a cert":  {Endpoints: "127.0.0.1:1", CACert: certs.ClientKey},
		"key of another cert":     {Endpoints: "127.0.0.1:1", Cert: certs.ClientCert, Key: certs.ServerKey},
		"TLS for embedded member": {CACert: certs.CA},
	} {
		_, err := etcdflag.Open(f, t.TempDir())
		assert.ErrorIs(t, err, etcdflag.ErrInvalid, name)
	}
}

// An -etcd-key others may read is refused, naming the fix, before
// anything is dialled, unless InsecurePermissions.
func TestAnEtcdKeyOthersMayReadIsRefused(t *testing.T) {
	certs, err := testcerts.Write(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.Chmod(certs.ClientKey, 0o644))
	f := etcdflag.Flags{Endpoints: "127.0.0.1:1", CACert: certs.CA, Cert: certs.ClientCert, Key: certs.ClientKey}
	_, err = f.TLS()
	require.ErrorIs(t, err, privatefile.ErrUnsafe)
	require.Contains(t, err.Error(), "-etcd-key "+certs.ClientKey+" has mode 0644")
	f.InsecurePermissions = true
	_, err = f.TLS()
	require.NoError(t, err)
}

// An -etcd-cacert or -etcd-cert another user may change is refused,
// naming the flag and the fix, before anything is dialled (whoever may add
// a CA passes for etcd), unless InsecurePermissions.
func TestAnEtcdCAOrCertificateOthersMayChangeIsRefused(t *testing.T) {
	for _, flag := range []string{"-etcd-cacert", "-etcd-cert"} {
		certs, err := testcerts.Write(t.TempDir())
		require.NoError(t, err)
		f := etcdflag.Flags{Endpoints: "127.0.0.1:1", CACert: certs.CA, Cert: certs.ClientCert, Key: certs.ClientKey}
		path := map[string]string{"-etcd-cacert": certs.CA, "-etcd-cert": certs.ClientCert}[flag]
		require.NoError(t, os.Chmod(path, 0o666))
		_, err = f.TLS()
		require.ErrorIs(t, err, privatefile.ErrUnsafe, flag)
		require.Contains(t, err.Error(), flag+" "+path+" has mode 0666")
		require.Contains(t, err.Error(), "chmod 644 "+path)
		f.InsecurePermissions = true
		_, err = f.TLS()
		require.NoError(t, err, flag)
	}
}

// Args spells the flags as a child process's command line.
func ExampleFlags_Args() {
	f := etcdflag.Flags{Endpoints: "https://10.0.0.1:2379,https://10.0.0.2:2379", CACert: "ca.pem"}
	fmt.Println(f.Args())
	// Output: [-etcd=https://10.0.0.1:2379,https://10.0.0.2:2379 -etcd-cacert=ca.pem]
}
