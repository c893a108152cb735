// Package tokenfile keeps a bearer token in a file readable by its user
// alone, as notebook servers do: the jobs example's daemon and the
// convergestore server generate one there when given none, and their
// clients read it. A file others could read or change, another user's
// file, a symbolic link, or a file that does not hold exactly one token is
// refused (the rule of a secret in internal/privatefile, and no link): a
// token read from it could have been planted or seen. Tokens never appear
// in errors. ReadSecret reads any other secret of one line (a password)
// under the same rule.
package tokenfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/converge-go/converge/internal/atomicfile"
	"github.com/converge-go/converge/internal/privatefile"
)

// ErrUnsafe matches the error of a token file that must not be used:
// readable or writable by others, owned by another user, not a regular
// file (a symbolic link included), or not holding one token. The error of
// a file's mode or owner matches privatefile.ErrUnsafe too.
var ErrUnsafe = errors.New("unsafe token file")

// maxBytes bounds what is read from a token file.
const maxBytes = 4096

// Read returns the token in path; ok is false if there is no such file. A
// file that must not be used returns an error matching ErrUnsafe, naming
// the file and why, never its content.
func Read(path string) (tok string, ok bool, err error) {
	b, err := readPrivate(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", false, nil
	case err != nil:
		return "", false, err
	}
	tok, err = parse(b)
	if err != nil {
		return "", false, fmt.Errorf("%w: %s %w", ErrUnsafe, path, err)
	}
	return tok, true, nil
}

// ReadSecret returns the secret in path: one line of any text (a password
// may hold spaces), trimmed of the white space around it. The file must
// meet Read's rule; one that does not, is empty, holds more than one line
// or more than 4096 bytes returns an error matching ErrUnsafe, naming the
// file and why, never its content. A missing file is an error matching
// fs.ErrNotExist.
func ReadSecret(path string) (string, error) {
	b, err := readPrivate(path)
	if err != nil {
		return "", err
	}
	s := strings.TrimSpace(string(b))
	if s == "" || len(b) > maxBytes || strings.ContainsAny(s, "\n\r") {
		return "", fmt.Errorf("%w: %s must hold one line", ErrUnsafe, path)
	}
	return s, nil
}

// readPrivate returns the first maxBytes+1 bytes of path, a file that
// meets the rule of a secret (privatefile.CheckSecret), opened without
// following a symbolic link and checked once open; one that does not is
// an error matching ErrUnsafe.
func readPrivate(path string) ([]byte, error) {
	f, err := openPrivate(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := privatefile.CheckSecret(path, fi); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsafe, err)
	}
	return io.ReadAll(io.LimitReader(f, maxBytes+1))
}

// Create generates a token (32 random bytes, hex) and writes it to path,
// created with mode 0600, whole or not at all (internal/atomicfile: a
// temporary file synced, then renamed, then the directory synced). It
// returns the token.
func Create(path string) (string, error) {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails
	tok := hex.EncodeToString(b)
	if err := atomicfile.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		return "", err
	}
	return tok, nil
}

// ReadOrCreate returns the token in path, generating it with Create the
// first time.
func ReadOrCreate(path string) (string, error) {
	tok, ok, err := Read(path)
	if err != nil || ok {
		return tok, err
	}
	return Create(path)
}

// parse returns the token held in b: one line of printable ASCII without
// spaces, a final newline allowed.
func parse(b []byte) (string, error) {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		b = b[:len(b)-1]
	}
	if len(b) == 0 || len(b) > maxBytes {
		return "", fmt.Errorf("holds no token (%d bytes)", len(b))
	}
	for _, c := range b {
		if c <= ' ' || c > '~' {
			return "", errors.New("holds something other than one token")
		}
	}
	return string(b), nil
}
