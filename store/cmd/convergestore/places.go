package main

import (
	"log/slog"

	"github.com/converge-go/converge/internal/privatefile"
)

// This file holds the check of the places the server is told to use,
// before it reads or writes any (internal/privatefile's rule): a store or
// its snapshots in a directory another user may change could be replaced
// (a snapshot planted there would be the one a recovery picks), a snapshot
// file another user may change could be restored, a key others may read
// is no longer private, and whoever may change the kinds' rules or the
// client CAs decides what the server admits or whom it lets in.
// -insecure-permissions accepts such a place, with a warning.

// checkPlaces makes -dir, -snapshot-dir and -log-dir with mode 0700 if
// they do not exist, and checks them, -recover-from, -restore-from,
// -kinds, -client-ca, -tls-cert (a missing one is left to its own error)
// and -tls-key. An unsafe place is an error naming its flag, what is
// wrong and how to fix it, or, with -insecure-permissions, a warning.
func checkPlaces(cfg config, log *slog.Logger) error {
	return privatefile.CheckPlaces(log, cfg.insecurePermissions,
		privatefile.Place{Flag: "-dir", Path: cfg.dir, Check: privatefile.Dir},
		privatefile.Place{Flag: "-snapshot-dir", Path: cfg.snapshotDir, Check: privatefile.Dir},
		privatefile.Place{Flag: "-log-dir", Path: cfg.logDir, Check: privatefile.Dir},
		privatefile.Place{Flag: "-recover-from", Path: cfg.recoverFrom, Check: privatefile.Trusted},
		privatefile.Place{Flag: "-restore-from", Path: cfg.restoreFrom, Check: privatefile.Trusted},
		privatefile.Place{Flag: "-kinds", Path: cfg.kinds, Check: privatefile.Trusted},
		privatefile.Place{Flag: "-client-ca", Path: cfg.clientCA, Check: privatefile.Trusted},
		privatefile.Place{Flag: "-tls-cert", Path: cfg.tlsCert, Check: privatefile.Trusted},
		privatefile.Place{Flag: "-tls-key", Path: cfg.tlsKey, Check: privatefile.Secret},
	)
}
