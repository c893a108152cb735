package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/converge-go/converge/internal/tokenfile"
)

// This file holds the server's bearer tokens. A store is never served
// writable to whoever reaches it unless told to (-insecure-no-token):
// without a read-write token of its own (-token-file) the server generates
// one, once, into TokenFile in its directory, readable by its user alone,
// and clients read it from there (convergectl -token-file DIR/token).

// TokenFile is the file in the server's directory that holds the token it
// generated (32 random bytes, hex), mode 0600. It is the server's: given
// other read-write tokens, or none, it removes the file, so that no client
// picks up a token the server no longer accepts.
const TokenFile = "token"

// errTokenFile marks a token file the server refuses to use: readable or
// writable by others, owned by another user, not a regular file (a
// symbolic link included), or not holding one token.
var errTokenFile = tokenfile.ErrUnsafe

// tokens are the bearer tokens the server accepts, and where the
// read-write one comes from, for the announcement.
type tokens struct {
	rw, ro []string
	// generated is the path of DIR's TokenFile when the read-write token
	// is the one in it, else "".
	generated string
}

// all returns every token, the read-write ones first.
func (t tokens) all() []string { return append(append([]string(nil), t.rw...), t.ro...) }

// loadTokens returns the tokens cfg asks for: none with -insecure-no-token;
// else the read-only tokens of -read-token-file and the read-write tokens
// of -token-file, or, if none is given, the one in DIR's TokenFile,
// generated the first time. Every file is checked by readTokenFile. It
// never returns a token in an error.
func loadTokens(cfg config) (tokens, error) {
	own := filepath.Join(cfg.dir, TokenFile)
	if cfg.insecureNoToken {
		return tokens{}, removeStale(own, nil)
	}
	var t tokens
	var err error
	if t.ro, err = readTokenFiles(cfg.readTokenFiles); err != nil {
		return tokens{}, err
	}
	if len(cfg.tokenFiles) > 0 {
		if t.rw, err = readTokenFiles(cfg.tokenFiles); err != nil {
			return tokens{}, err
		}
		return t, removeStale(own, cfg.tokenFiles)
	}
	tok, ok, err := readTokenFile(own)
	if err == nil && !ok {
		tok, err = createTokenFile(own)
	}
	if err != nil {
		return tokens{}, err
	}
	t.rw, t.generated = []string{tok}, own
	return t, nil
}

// readTokenFiles returns the token of each file, in order; a file that
// does not exist is an error.
func readTokenFiles(paths []string) ([]string, error) {
	var toks []string
	for _, p := range paths {
		tok, ok, err := readTokenFile(p)
		switch {
		case err != nil:
			return nil, err
		case !ok:
			return nil, fmt.Errorf("token file %s: %w", p, fs.ErrNotExist)
		}
		toks = append(toks, tok)
	}
	return toks, nil
}

// removeStale removes the TokenFile at own, left by an earlier run, unless
// it is one of the files given.
func removeStale(own string, given []string) error {
	fi, err := os.Lstat(own)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	for _, g := range given {
		if gi, err := os.Stat(g); err == nil && os.SameFile(fi, gi) {
			return nil
		}
	}
	return os.Remove(own)
}

// createTokenFile generates a token into path, mode 0600, whole or not at
// all; readTokenFile returns the token in path (ok false if there is
// none), refusing a file that matches errTokenFile. See internal/tokenfile.
func createTokenFile(path string) (string, error) { return tokenfile.Create(path) }

func readTokenFile(path string) (tok string, ok bool, err error) { return tokenfile.Read(path) }
