package main

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/converge-go/converge/internal/privatefile"
	"github.com/converge-go/converge/internal/testcerts"
)

// TestADaemonDirectoryAnotherUserMayChangeIsRefused: a daemon's directory
// of mode 0777, or (as root) of another user, is refused before anything
// is made in it, by RunDaemon and by jobs daemon, with an error
// naming -dir, the path, what is wrong and how to fix it; with
// InsecurePermissions (-insecure-permissions) it is used.
func TestADaemonDirectoryAnotherUserMayChangeIsRefused(t *testing.T) {
	shared := t.TempDir()
	chmod(t, shared, 0o777)
	dirs := map[string]string{"of mode 0777": shared}
	if os.Getuid() == 0 {
		theirs := t.TempDir()
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		dirs["of another user"] = theirs
	}
	// A daemon that started would stop at once.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for name, dir := range dirs {
		cfg := DaemonConfig{Dir: dir, Addr: "127.0.0.1:0", Workers: 1, Grace: time.Second,
			BackoffBase: time.Second, BackoffMax: time.Second, Executable: "/nonexistent"}
		err := RunDaemon(ctx, cfg)
		if !errors.Is(err, privatefile.ErrUnsafe) || !strings.Contains(err.Error(), "-dir "+dir) || !strings.Contains(err.Error(), "-insecure-permissions") {
			t.Errorf("%s: RunDaemon: %v; want ErrUnsafe naming -dir %s and -insecure-permissions", name, err, dir)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("%s: %d files made in the directory refused", name, len(entries))
		}
		if err := cmdDaemon(ctx, []string{"-dir", dir, "-addr", "127.0.0.1:0"}, io.Discard); !errors.Is(err, privatefile.ErrUnsafe) {
			t.Errorf("%s: jobs daemon: %v; want ErrUnsafe", name, err)
		}
		cfg.InsecurePermissions = true
		if err := RunDaemon(ctx, cfg); errors.Is(err, privatefile.ErrUnsafe) {
			t.Errorf("%s: with InsecurePermissions: %v", name, err)
		}
		if _, err := os.Stat(filepath.Join(dir, "jobs.db")); err != nil {
			t.Errorf("%s: with InsecurePermissions, no store was made: %v", name, err)
		}
	}
}

// TestAStoreKeyOthersMayReadIsRefused: jobs daemon refuses a
// -store-key of mode 0644, naming the flag and the fix, before it reaches
// the store server.
func TestAStoreKeyOthersMayReadIsRefused(t *testing.T) {
	certs, err := testcerts.Write(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	chmod(t, certs.ClientKey, 0o644)
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // a daemon that started would stop at once
	err = cmdDaemon(ctx, []string{"-dir", t.TempDir(), "-addr", "127.0.0.1:0",
		"-store-server", "https://127.0.0.1:1/store", "-store-ca", certs.CA, "-store-cert", certs.ClientCert, "-store-key", certs.ClientKey}, io.Discard)
	if !errors.Is(err, privatefile.ErrUnsafe) || !strings.Contains(err.Error(), "-store-key "+certs.ClientKey) || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("jobs daemon -store-key of mode 0644: %v; want ErrUnsafe naming -store-key and chmod 600", err)
	}
}

// TestAStoreCAOrCertificateOthersMayChangeIsRefused: jobs daemon refuses a
// -store-ca or -store-cert of mode 0666 (whoever may add a CA passes for
// the store server and receives the daemon's token), naming the flag and
// the fix, before it reaches the store server.
func TestAStoreCAOrCertificateOthersMayChangeIsRefused(t *testing.T) {
	for _, flag := range []string{"-store-ca", "-store-cert"} {
		certs, err := testcerts.Write(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		path := map[string]string{"-store-ca": certs.CA, "-store-cert": certs.ClientCert}[flag]
		chmod(t, path, 0o666)
		ctx, cancel := context.WithCancel(t.Context())
		cancel() // a daemon that started would stop at once
		err = cmdDaemon(ctx, []string{"-dir", t.TempDir(), "-addr", "127.0.0.1:0",
			"-store-server", "https://127.0.0.1:1/store", "-store-ca", certs.CA, "-store-cert", certs.ClientCert, "-store-key", certs.ClientKey}, io.Discard)
		if !errors.Is(err, privatefile.ErrUnsafe) || !strings.Contains(err.Error(), flag+" "+path) || !strings.Contains(err.Error(), "chmod 644") {
			t.Errorf("jobs daemon %s of mode 0666: %v; want ErrUnsafe naming %s and chmod 644", flag, err, flag)
		}
	}
}
