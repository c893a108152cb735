package etcdtest

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/converge-go/converge/examples/internal/procs"
	"github.com/converge-go/converge/internal/testcerts"
	"github.com/converge-go/converge/store/etcdstore/etcdprocs"
)

// Process is an etcd server process serving clients over TLS.
type Process struct {
	// Endpoint is its https client URL.
	Endpoint string
	proc     *procs.Proc
	log      string
}

// StartTLSProcess starts the etcd binary bin (etcdprocs.Build) as a
// one-member cluster with its data in dir, serving clients over TLS with
// c's server certificate and accepting only clients with a certificate
// c's CA signed, and waits up to patience until it serves. Unlike
// StartTLS, nothing of the server runs in the calling process: a test
// that counts its goroutines sees only its own. The caller calls Stop.
func StartTLSProcess(ctx context.Context, bin, dir string, c testcerts.Certs, patience time.Duration) (*Process, error) {
	addrs, err := etcdprocs.FreeAddrs(2)
	if err != nil {
		return nil, err
	}
	client, peer := "https://"+addrs[0], "http://"+addrs[1]
	p := &Process{Endpoint: client, log: filepath.Join(dir, "etcd.log")}
	out, err := os.Create(p.log)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	cmd := exec.Command(bin,
		"--name", "tls", "--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
		"--initial-cluster", "tls="+peer,
		"--cert-file", c.ServerCert, "--key-file", c.ServerKey,
		"--trusted-ca-file", c.CA, "--client-cert-auth",
		"--heartbeat-interval", "10", "--election-timeout", "100",
		"--unsafe-no-fsync", "--log-level", "error")
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if p.proc, err = procs.Start(cmd); err != nil {
		return nil, fmt.Errorf("etcdtest: start etcd: %w", err)
	}
	if err := p.waitServing(ctx, c, patience); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// waitServing reads through a TLS client until it succeeds.
func (p *Process) waitServing(ctx context.Context, c testcerts.Certs, patience time.Duration) error {
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{p.Endpoint},
		TLS:         &tls.Config{RootCAs: c.Roots, Certificates: []tls.Certificate{c.Client}, MinVersion: tls.VersionTLS12},
		DialTimeout: patience, Logger: zap.NewNop(),
	})
	if err != nil {
		return err
	}
	defer cli.Close()
	deadline := time.Now().Add(patience)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		_, err := cli.Get(rctx, "health")
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			log, _ := os.ReadFile(p.log)
			return errors.Join(fmt.Errorf("etcdtest: etcd at %s not serving within %v: %w", p.Endpoint, patience, err), errors.New(string(log)))
		}
		select {
		case <-tick.C:
		case <-p.proc.Done():
			log, _ := os.ReadFile(p.log)
			return fmt.Errorf("etcdtest: etcd exited: %s", log)
		}
	}
}

// Stop kills the process and waits for it.
func (p *Process) Stop() { p.proc.Kill() }
