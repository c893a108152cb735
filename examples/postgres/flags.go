package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/converge-go/converge/examples/postgres/internal/cluster"
	"github.com/converge-go/converge/internal/privatefile"
	"github.com/converge-go/converge/internal/tokenfile"
)

// errSecretFile marks a file of a secret (a token, a password) that is
// refused: readable or writable by others, another user's, not a regular
// file, or not one line.
var errSecretFile = tokenfile.ErrUnsafe

// runOperatorCommand runs "postgres operator [flags]" until SIGINT or
// SIGTERM.
func runOperatorCommand(args []string, stderr io.Writer) int {
	fl := flag.NewFlagSet("operator", flag.ContinueOnError)
	fl.SetOutput(stderr)
	cfg := DaemonConfig{}
	var tokenFile, passwordFile string
	var verbose, insecurePermissions bool
	fl.StringVar(&cfg.StoreServer, "store-server", "", "the store's URL, served with the API-server layer (required)")
	fl.StringVar(&tokenFile, "store-token-file", "", "the store's bearer token, read from this file (mode 0600)")
	fl.StringVar(&cfg.DSN, "pg", "", "PostgreSQL's connection string (required); keep the password out of it")
	fl.StringVar(&passwordFile, "pg-password-file", "", "PostgreSQL's password, read from this file (mode 0600)")
	fl.StringVar(&cfg.BinDir, "pg-bin", "", "the directory of pg_dump and pg_restore (default: found)")
	fl.StringVar(&cfg.Dir, "dir", ".postgres-operator", "the dumps (DIR/backups), the record of CREATE DATABASEs (DIR/creating) and the file operator.url")
	fl.StringVar(&cfg.Addr, "addr", "127.0.0.1:7018", "the address of /healthz, /readyz and "+DebugPath+" (loopback unless -insecure-no-token)")
	fl.BoolVar(&cfg.InsecureNoToken, "insecure-no-token", false, "serve -addr on an address that is not loopback: the debug page has no token, and shows the roles', databases' and backups' keys and PostgreSQL's errors to whoever reaches it")
	fl.StringVar(&cfg.WALArchive, "wal-archive", "", "the WAL archive: a directory on PostgreSQL's host its user writes; the operator sets archive_command to copy into it and takes base backups (method base)")
	fl.StringVar(&cfg.RestoreDir, "restore-dir", "", "where drills' scratch clusters and Restores' clusters go (default DIR/restores)")
	fl.StringVar(&cfg.ServerUser, "pg-user", "postgres", "the user restored clusters run as when the operator runs as root")
	fl.DurationVar(&cfg.DriftInterval, "drift-interval", 30*time.Second, "how often the catalog is polled for drift")
	fl.DurationVar(&cfg.PruneInterval, "prune-interval", 10*time.Minute, "how often the pruners pass")
	fl.DurationVar(&cfg.CheckInterval, "check-interval", 5*time.Second, "how often PostgreSQL's health is checked")
	fl.DurationVar(&cfg.BackoffMax, "backoff-max", 30*time.Second, "the longest backoff of a failing object")
	fl.IntVar(&cfg.Workers, "workers", 4, "reconciles at once per kind")
	fl.BoolVar(&insecurePermissions, privatefile.AcceptFlag, false, "use a -dir another user may change, with a warning; without it such a -dir is refused")
	fl.BoolVar(&verbose, "v", false, "debug logs")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	if cfg.StoreServer == "" || cfg.DSN == "" || fl.NArg() > 0 {
		fmt.Fprintln(stderr, "postgres operator: -store-server and -pg are required, and nothing else")
		fl.Usage()
		return 2
	}
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	if err := prepareDaemon(&cfg, tokenFile, passwordFile, insecurePermissions); err != nil {
		fmt.Fprintf(stderr, "postgres operator: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := RunDaemon(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "postgres operator: %v\n", err)
		return 1
	}
	return 0
}

// prepareDaemon makes and checks the directory (internal/privatefile:
// whoever may change it may change the dumps restores read; accepted with
// insecurePermissions, with a warning), reads the secret files, and finds
// the PostgreSQL programs and the executable.
func prepareDaemon(cfg *DaemonConfig, tokenFile, passwordFile string, insecurePermissions bool) error {
	err := privatefile.CheckPlaces(cfg.Logger, insecurePermissions,
		privatefile.Place{Flag: "-dir", Path: cfg.Dir, Check: privatefile.Dir})
	if err != nil {
		return err
	}
	if tokenFile != "" {
		if cfg.StoreToken, err = readSecretFile(tokenFile); err != nil {
			return err
		}
	}
	if passwordFile != "" {
		if cfg.Password, err = readSecretFile(passwordFile); err != nil {
			return err
		}
	}
	if cfg.BinDir, err = cluster.BinDir(cluster.Options{BinDir: cfg.BinDir}); err != nil {
		return err
	}
	if cfg.RestoreDir == "" {
		cfg.RestoreDir = filepath.Join(cfg.Dir, "restores")
	}
	if cfg.RestoreDir, err = filepath.Abs(cfg.RestoreDir); err != nil {
		return err
	}
	cfg.Executable, err = os.Executable()
	return err
}

// readSecretFile returns the secret in path, one line: a file that others
// may read or write, another user's, or anything but a regular file (a
// symbolic link included) is refused (internal/tokenfile, the rule of a
// token file) with an error matching errSecretFile that never shows what
// it holds.
func readSecretFile(path string) (string, error) { return tokenfile.ReadSecret(path) }
