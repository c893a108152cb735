package main

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/converge-go/converge/internal/privatefile"
)

// TestAStoreDirectoryAnotherUserMayChangeIsRefused: a -store directory of
// mode 0777, or (as root) of another user, where the store and the
// checkpoint a controller starts from would be, is refused before
// anything is made in it, naming -store and the fix.
func TestAStoreDirectoryAnotherUserMayChangeIsRefused(t *testing.T) {
	shared := t.TempDir()
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]string{"of mode 0777": shared}
	if os.Getuid() == 0 {
		theirs := t.TempDir()
		if err := os.Chown(theirs, 65534, 65534); err != nil {
			t.Fatal(err)
		}
		dirs["of another user"] = theirs
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // a demo that started would stop at once
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for name, dir := range dirs {
		_, err := Run(ctx, Config{Replicas: 1, StoreDir: dir, Executable: exe})
		if !errors.Is(err, privatefile.ErrUnsafe) || !strings.Contains(err.Error(), "-store "+dir) {
			t.Errorf("%s: %v; want ErrUnsafe naming -store %s", name, err, dir)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("%s: %d files made in the directory refused", name, len(entries))
		}
	}
}
