package main

import (
	"context"
	"crypto/tls"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAClientKeyOthersMayReadIsRefusedUnlessAccepted: a -key of mode 0644
// is refused (exit 1, nothing sent), as ssh refuses such a key, with an
// error naming -key, its mode and chmod 600; with -insecure-permissions
// it is used, with a warning. As root, another user's key is refused too.
func TestAClientKeyOthersMayReadIsRefusedUnlessAccepted(t *testing.T) {
	m, url, files := serveMutualTLS(t, tls.VersionTLS13)
	require.NoError(t, os.Chmod(files.key, 0o644))
	args := []string{"-cacert", files.ca, "-cert", files.cert, "-key", files.key, "put", "k"}
	r := ctl(t, url, `{"v":1}`, args...)
	require.Equal(t, exitError, r.code, r.stderr)
	require.Contains(t, r.stderr, "-key "+files.key+" has mode 0644")
	require.Contains(t, r.stderr, "chmod 600 "+files.key)
	require.Contains(t, r.stderr, "-insecure-permissions")
	_, err := m.Get(context.Background(), "k")
	require.Error(t, err, "written with a refused key")

	r = ctl(t, url, `{"v":1}`, append([]string{"-insecure-permissions"}, args...)...)
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stderr, "level=WARN")

	if os.Getuid() != 0 {
		return
	}
	require.NoError(t, os.Chmod(files.key, 0o600))
	require.NoError(t, os.Chown(files.key, 65534, 65534))
	r = ctl(t, url, `{"v":1}`, args...)
	require.Equal(t, exitError, r.code, r.stderr)
	require.Contains(t, r.stderr, "belongs to user 65534")
}

// TestACACertificateOrCertificateOthersMayChangeIsRefusedUnlessAccepted:
// a -cacert or -cert file of mode 0666 is refused (exit 1, nothing sent):
// whoever may add a CA to -cacert can pass for the server and receive the
// token. The error names the flag, its mode and chmod 644; with
// -insecure-permissions the file is used, with a warning.
func TestACACertificateOrCertificateOthersMayChangeIsRefusedUnlessAccepted(t *testing.T) {
	m, url, files := serveMutualTLS(t, tls.VersionTLS13)
	args := []string{"-cacert", files.ca, "-cert", files.cert, "-key", files.key, "put", "k"}
	for _, p := range []struct{ flag, path string }{{"-cacert", files.ca}, {"-cert", files.cert}} {
		require.NoError(t, os.Chmod(p.path, 0o666))
		r := ctl(t, url, `{"v":1}`, args...)
		require.Equal(t, exitError, r.code, r.stderr)
		require.Contains(t, r.stderr, p.flag+" "+p.path+" has mode 0666")
		require.Contains(t, r.stderr, "chmod 644 "+p.path)
		require.Contains(t, r.stderr, "-insecure-permissions")
		_, err := m.Get(context.Background(), "k")
		require.Error(t, err, "written with a refused %s", p.flag)

		r = ctl(t, url, `{"v":1}`, append([]string{"-insecure-permissions"}, args...)...)
		require.Equal(t, 0, r.code, r.stderr)
		require.Contains(t, r.stderr, "level=WARN")
		obj, err := m.Get(context.Background(), "k")
		require.NoError(t, err)
		_, err = m.Delete(context.Background(), "k", obj.Revision)
		require.NoError(t, err)
		require.NoError(t, os.Chmod(p.path, 0o644))
	}
}
