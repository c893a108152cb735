package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"

	"github.com/converge-go/converge/internal/privatefile"
)

// This file holds the check of the places the server is told to use,
// before it reads or writes any (internal/privatefile's rule): a store or
// its snapshots in a directory another user may change could be replaced
// (a snapshot planted there would be the one a recovery picks), a snapshot
// file another user may change could be restored, and a key others may
// read is no longer private. -insecure-permissions accepts such a place,
// with a warning.

// checkPlaces makes -dir and -snapshot-dir with mode 0700 if they do not
// exist, and checks them, -recover-from, -restore-from (a missing one is
// left to their own errors) and -tls-key. An unsafe place is an error
// naming its flag, what is wrong and how to fix it, or, with
// -insecure-permissions, a warning.
func checkPlaces(cfg config, log *slog.Logger) error {
	for _, p := range []struct {
		flag, path string
		check      func(string) error
	}{
		{"-dir", cfg.dir, privatefile.Dir},
		{"-snapshot-dir", cfg.snapshotDir, privatefile.Dir},
		{"-recover-from", cfg.recoverFrom, privatefile.Trusted},
		{"-restore-from", cfg.restoreFrom, privatefile.Trusted},
		{"-tls-key", cfg.tlsKey, privatefile.Secret},
	} {
		if p.path == "" {
			continue
		}
		err := p.check(p.path)
		switch {
		case errors.Is(err, privatefile.ErrUnsafe) && cfg.insecurePermissions:
			log.Warn("using an unsafe place, as -insecure-permissions allows", "flag", p.flag, "err", err)
		case errors.Is(err, privatefile.ErrUnsafe):
			return fmt.Errorf("%s %w (or accept it with -insecure-permissions)", p.flag, err)
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("%s: %w", p.flag, err)
		}
	}
	return nil
}
