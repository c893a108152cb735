package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/converge-go/converge/examples/internal/demo"
	"github.com/converge-go/converge/examples/postgres/internal/cluster"
)

// This file wires the narrated demo: a private PostgreSQL, a store server
// and the operator as a process of its own, which the story (scenario.go)
// stops and starts again; at the end everything is stopped and removed.

// DemoConfig configures runDemo.
type DemoConfig struct {
	Out io.Writer
	// Executable is this program, run as the operator; Env is added to
	// the operator's environment.
	Executable string
	Env        []string
	// Dir is where the demo keeps its files (default: a temporary
	// directory removed at exit); Logs receives the operator's logs, and
	// its dumps' (default: discarded). Make it an *os.File: the dumps
	// outlive an operator killed, and a pipe would keep the wait for it
	// until they end.
	Dir  string
	Logs io.Writer
}

// story is the demo's state: what it started, and its narrator.
type story struct {
	cfg    DemoConfig
	say    *demo.Narrator
	pg     *cluster.Cluster
	store  *storeServer
	stores Stores
	op     *operatorProc
}

// runDemoCommand runs the narrated demo until it ends or SIGINT/SIGTERM.
func runDemoCommand(args []string, stdout, stderr io.Writer) int {
	fl := flag.NewFlagSet("postgres", flag.ContinueOnError)
	fl.SetOutput(stderr)
	verbose := fl.Bool("v", false, "show the operator's logs")
	if err := fl.Parse(args); err != nil || fl.NArg() > 0 {
		return 2
	}
	exe, err := os.Executable()
	if err != nil {
		fmt.Fprintln(stderr, "postgres:", err)
		return 1
	}
	cfg := DemoConfig{Out: stdout, Executable: exe}
	if *verbose {
		cfg.Logs = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := runDemo(ctx, cfg); err != nil {
		fmt.Fprintln(stderr, "postgres:", err)
		return 1
	}
	return 0
}

// runDemo tells the story, then stops and removes everything it started,
// whether the story ended well or not.
func runDemo(ctx context.Context, cfg DemoConfig) (err error) {
	if cfg.Dir == "" {
		dir, err := os.MkdirTemp("", "postgres-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cfg.Dir = dir
	}
	s := &story{cfg: cfg, say: demo.NewNarrator(cfg.Out)}
	err = s.start(ctx)
	if err == nil {
		err = demo.Play(ctx, s.apply, s.alter, s.drift, s.backups, s.restored, s.outage, s.freshStore, s.deleteWhileDown)
	}
	var ddl string
	if s.pg != nil {
		ddl = s.ddlSummary()
	}
	err = errors.Join(err, s.shutdown())
	sum := demo.NewSummary(cfg.Out)
	if s.pg != nil {
		sum.Line("postgres", "PostgreSQL %s on 127.0.0.1:%d, as %s", filepath.Base(filepath.Dir(s.pg.BinDir())), s.pg.Port(), serverUser())
		sum.Line("ddl", "%s", ddl)
	}
	sum.Result(err)
	return err
}

// start starts PostgreSQL, the store server and the operator.
func (s *story) start(ctx context.Context) error {
	var err error
	if s.pg, err = cluster.Start(ctx, cluster.Options{Settings: []string{"archive_mode=on"}}); err != nil {
		return err
	}
	if err := s.makeArchive(); err != nil {
		return err
	}
	s.say.Say("PostgreSQL started: a private cluster in %s on 127.0.0.1:%d, run as %s, logging its DDL", s.pg.Dir(), s.pg.Port(), serverUser())
	if s.store, err = startStoreServer(s.cfg.Dir); err != nil {
		return err
	}
	if s.stores, _, err = s.store.stores(); err != nil {
		return err
	}
	s.say.Say("store server: %s (API-server layer; its token in %s)", s.store.URL, s.store.TokenFile)
	return s.startOperator(ctx, s.store)
}

// startOperator starts the operator on st.
func (s *story) startOperator(ctx context.Context, st *storeServer) error {
	pw := filepath.Join(s.cfg.Dir, "pg-password")
	if err := os.WriteFile(pw, []byte(s.pg.Password()+"\n"), 0o600); err != nil {
		return err
	}
	op, err := startOperatorProc(ctx, s.cfg.Executable, s.cfg.Env, s.cfg.Dir, s.cfg.Logs, time.Minute,
		"-store-server", st.URL, "-store-token-file", st.TokenFile, "-pg", s.pg.DSNWithoutPassword("postgres"),
		"-pg-password-file", pw, "-pg-bin", s.pg.BinDir(), "-drift-interval", "1s", "-check-interval", "500ms",
		"-prune-interval", "2s", "-backoff-max", "2s", "-v",
		"-wal-archive", s.archiveDir(), "-restore-dir", s.restoreDir())
	if err != nil {
		return err
	}
	s.op = op
	s.say.Say("operator started: pid %d, ready (%s/readyz), debug page %s%s", op.Pid(), op.base, op.base, DebugPath)
	return nil
}

// shutdown stops the operator, the store server and PostgreSQL, and
// removes the cluster.
func (s *story) shutdown() error {
	var errs []error
	if s.op != nil {
		errs = append(errs, s.op.Stop(time.Minute))
		s.say.Say("operator stopped")
	}
	if s.store != nil {
		errs = append(errs, s.store.Close())
	}
	if s.pg != nil {
		errs = append(errs, s.pg.Remove())
		s.say.Say("PostgreSQL stopped and its cluster removed: no process of the demo is left")
	}
	return errors.Join(errs...)
}

// ddlSummary counts the CREATE and DROP statements of PostgreSQL's log.
func (s *story) ddlSummary() string {
	lines, err := s.pg.ReadLog()
	if err != nil {
		return err.Error()
	}
	counts := map[string]int{}
	for _, l := range lines {
		if sql, ok := l.Statement(); ok {
			verb, _, _ := strings.Cut(sql, " ")
			counts[verb]++
		}
	}
	return fmt.Sprintf("%d CREATE, %d ALTER, %d COMMENT, %d GRANT, %d DROP statements in PostgreSQL's log",
		counts["CREATE"], counts["ALTER"], counts["COMMENT"], counts["GRANT"], counts["DROP"])
}

// serverUser is the user the private cluster runs as.
func serverUser() string {
	if os.Geteuid() == 0 {
		return "the user postgres"
	}
	return "uid " + strconv.Itoa(os.Geteuid())
}
