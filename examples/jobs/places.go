package main

import (
	"log/slog"

	"github.com/converge-go/converge/internal/privatefile"
)

// This file holds the check of the places the daemon is told to use
// (internal/privatefile's rule, the one its token file follows): whoever
// may change the daemon's directory may change its jobs, and so run
// commands as the daemon's user; whoever may read the key of -store-key
// may pass for the daemon at the store server, and whoever may change
// -store-ca may pass for the store server. -insecure-permissions
// accepts such a place, with a warning.

// checkPlaces makes cfg.Dir with mode 0700 if it does not exist, and
// refuses it if another user may change it, unless
// cfg.InsecurePermissions.
func checkPlaces(cfg DaemonConfig) error {
	return privatefile.CheckPlaces(cfg.Logger, cfg.InsecurePermissions,
		privatefile.Place{Flag: "-dir", Path: cfg.Dir, Check: privatefile.Dir})
}

// checkStoreFiles refuses a -store-key file others may read or change, or
// another user's, and a -store-ca or -store-cert another user may change
// (whoever may add a CA passes for the store server), unless insecure
// (-insecure-permissions).
func checkStoreFiles(ca, cert, key string, insecure bool, log *slog.Logger) error {
	return privatefile.CheckPlaces(log, insecure,
		privatefile.Place{Flag: "-store-ca", Path: ca, Check: privatefile.Trusted},
		privatefile.Place{Flag: "-store-cert", Path: cert, Check: privatefile.Trusted},
		privatefile.Place{Flag: "-store-key", Path: key, Check: privatefile.Secret})
}
