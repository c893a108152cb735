package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/converge-go/converge/internal/tokenfile"
	"github.com/converge-go/converge/store"
)

// This file holds the daemon's bearer token: a daemon that runs commands
// never serves its store writable to whoever reaches it unless told to
// (InsecureNoToken). Without a token of its own it generates one, once,
// into TokenFile in its directory, readable by its user alone, as notebook
// servers do; the client commands read it from there.

// TokenFile is the file in the daemon's directory that holds the token the
// daemon generated (32 random bytes, hex), mode 0600. It is the daemon's: a
// daemon given a token, or none (InsecureNoToken), removes it.
const TokenFile = "token"

// errTokenFile marks a token file the daemon and the clients refuse to
// use: readable or writable by others, owned by another user, not a
// regular file, or not holding a token.
var errTokenFile = tokenfile.ErrUnsafe

// daemonToken returns the token the daemon requires: cfg.Token if set, none
// if cfg.InsecureNoToken, else the one in cfg.Dir's TokenFile, generated
// the first time. It never logs or returns the token in an error.
func daemonToken(cfg DaemonConfig) (string, error) {
	path := filepath.Join(cfg.Dir, TokenFile)
	switch {
	case cfg.Token != "" && cfg.InsecureNoToken:
		return "", fmt.Errorf("%w: jobs: a token and InsecureNoToken both given", store.ErrInvalid)
	case cfg.Token != "" || cfg.InsecureNoToken:
		// A token file left by an earlier daemon would give clients a
		// token this one refuses.
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
		return cfg.Token, nil
	}
	tok, ok, err := readTokenFile(path)
	if err != nil || ok {
		return tok, err
	}
	return createTokenFile(path)
}

// createTokenFile generates a token into path, mode 0600, whole or not at
// all; readTokenFile returns the token in path (ok false if there is
// none), refusing a file that matches errTokenFile. See internal/tokenfile.
func createTokenFile(path string) (string, error) { return tokenfile.Create(path) }

func readTokenFile(path string) (tok string, ok bool, err error) { return tokenfile.Read(path) }
