package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

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
var errTokenFile = errors.New("jobs: unsafe token file")

// maxTokenBytes bounds what is read from a token file.
const maxTokenBytes = 4096

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

// createTokenFile generates a token and writes it to path, created with
// mode 0600, whole or not at all.
func createTokenFile(path string) (string, error) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	tok := hex.EncodeToString(b)
	tmp := path + ".tmp"
	if err := os.Remove(tmp); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := writeSynced(tmp, []byte(tok+"\n"), os.O_EXCL); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	return tok, syncDir(filepath.Dir(path))
}

// readTokenFile returns the token in path; ok is false if there is no such
// file. A file others may read or write, another user's, a symbolic link or
// anything but one token returns an error matching errTokenFile.
func readTokenFile(path string) (tok string, ok bool, err error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", false, nil
	case errors.Is(err, syscall.ELOOP):
		return "", false, fmt.Errorf("%w: %s is a symbolic link", errTokenFile, path)
	case err != nil:
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	if err := private(fi); err != nil {
		return "", false, fmt.Errorf("%w: %s %w: remove it (the daemon makes a new one) or make it 0600", errTokenFile, path, err)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxTokenBytes+1))
	if err != nil {
		return "", false, err
	}
	tok, err = parseToken(b)
	if err != nil {
		return "", false, fmt.Errorf("%w: %s %w", errTokenFile, path, err)
	}
	return tok, true, nil
}

// private checks that fi is a regular file of this process's user that no
// one else may read or write.
func private(fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return errors.New("is not a regular file")
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return fmt.Errorf("has mode %04o: others may read or change it", perm)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != os.Getuid() {
		return fmt.Errorf("belongs to user %d, not to user %d", st.Uid, os.Getuid())
	}
	return nil
}

// parseToken returns the token held in b: one line of printable ASCII
// without spaces, a final newline allowed.
func parseToken(b []byte) (string, error) {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	if len(b) == 0 || len(b) > maxTokenBytes {
		return "", fmt.Errorf("holds no token (%d bytes)", len(b))
	}
	for _, c := range b {
		if c <= ' ' || c > '~' {
			return "", errors.New("holds something other than one token")
		}
	}
	return string(b), nil
}
