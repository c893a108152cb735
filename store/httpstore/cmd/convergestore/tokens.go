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
var errTokenFile = errors.New("convergestore: unsafe token file")

// maxTokenBytes bounds what is read from a token file.
const maxTokenBytes = 4096

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
	if err := writeSynced(tmp, []byte(tok+"\n")); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, path); err != nil {
		return "", err
	}
	return tok, syncDir(filepath.Dir(path))
}

// writeSynced creates path (which must not exist) with mode 0600 and b in
// it, synced to disk.
func writeSynced(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
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
		return "", false, fmt.Errorf("%w: %s is a symbolic link: name the file it points to", errTokenFile, path)
	case err != nil:
		return "", false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", false, err
	}
	if err := private(fi); err != nil {
		return "", false, fmt.Errorf("%w: %s %w: make it mode 0600 and yours", errTokenFile, path, err)
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
