// Package privatefile holds the one rule by which converge's commands and
// examples' daemons judge the files and directories they are told to use:
// a place another user could change (or, for a secret, read) is refused
// with an error that says what is wrong (path, mode, owner) and how to fix
// it, because what is read from it could have been planted, and what is
// written to it could be seen or replaced.
//
// The rule, on Unix (other systems check the kind of file only):
//
//   - A secret (a token file, a TLS private key) is a regular file of the
//     process's user that no one else may read or write: mode 0600 or
//     stricter, as ssh requires of a private key.
//   - A trusted place (a directory the process keeps state in, a directory
//     of snapshots, a snapshot file named for a restore) is a regular file
//     or a directory that group and others may not write (mode 0755 or
//     stricter), owned by the process's user or by root (who may change
//     any file anyway, as ssh's StrictModes has it). A directory of
//     another user is refused even to root.
//
// Only the place itself is checked, not the directories above it. A
// symbolic link is followed, and what it names is checked (tokenfile
// refuses a link to a token file). A command checks the places its flags
// name with CheckPlaces, and accepts an unsafe one, with a warning, only
// when given AcceptFlag (-insecure-permissions, the same in every
// command); Dir makes a missing directory with mode 0700.
package privatefile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// ErrUnsafe matches the error of a place that must not be used: another
// user may change it, a secret others may read, or not the kind of file
// expected.
var ErrUnsafe = errors.New("unsafe permissions")

// Secret checks the secret file at path (see the package doc): its error
// matches ErrUnsafe and says how to fix the file.
func Secret(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	return CheckSecret(path, fi)
}

// CheckSecret checks fi, the secret file at path, as Secret does: given fi
// of an open file, what is checked is what is read.
func CheckSecret(path string, fi fs.FileInfo) error {
	if p := secret(fi); p != nil {
		return p.err(path, "600")
	}
	return nil
}

// Trusted checks the trusted file or directory at path (see the package
// doc): its error matches ErrUnsafe and says how to fix the place.
func Trusted(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if p := trusted(fi); p != nil {
		if fi.IsDir() {
			return p.err(path, "700")
		}
		return p.err(path, "644")
	}
	return nil
}

// Dir makes the directory at path, and its parents, with mode 0700 if it
// does not exist, then checks it as Trusted does.
func Dir(path string) error {
	if err := os.MkdirAll(path, 0o700); err != nil {
		return err
	}
	return Trusted(path)
}

// problem is why a place is refused.
type problem struct {
	what string // "has mode 0777: group or others may change it"
	// chmod or chown: the fix, the mode or the owner to give.
	chmod, chown bool
}

// err returns p as the error of the place at path, saying how to fix it,
// mode being the mode to give it.
func (p *problem) err(path, mode string) error {
	var fix string
	switch {
	case p.chmod:
		fix = fmt.Sprintf("chmod %s %s", mode, path)
	case p.chown:
		fix = fmt.Sprintf("chown %d %s (this process's user), or use a place of your own", os.Getuid(), path)
	default:
		fix = "name another"
	}
	return &unsafeError{fmt.Sprintf("%s %s: %s", path, p.what, fix)}
}

// unsafeError is the error of a place refused: it says which, why and how
// to fix it, and matches ErrUnsafe without repeating its text, so that
// callers prefix their own (the flag, "unsafe token file").
type unsafeError struct{ msg string }

func (e *unsafeError) Error() string { return e.msg }

func (e *unsafeError) Is(target error) bool { return target == ErrUnsafe }
