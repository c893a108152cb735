package boltstore_test

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"testing/synctest"
	"time"

	"github.com/converge-go/converge/store/boltstore"
	bolt "go.etcd.io/bbolt"
)

// A new store file is readable and writable by its owner only (0600).
func TestFileIsCreatedOwnerOnly(t *testing.T) {
	_, path := openTemp(t)
	info, err := os.Stat(path)
	mustNot(t, err)
	if perm := info.Mode().Perm(); perm != 0o600 {
		t.Fatalf("file mode %v, want 0600", perm)
	}
}

// A second Open of a file already open in this process gives up with
// ErrLocked after its lock timeout, and leaves the first store unharmed.
func TestSecondOpenInProcessGivesUpWithErrLockedAfterItsTimeout(t *testing.T) {
	s, path := openTemp(t)
	// bbolt polls the lock with sleeps: in a bubble the wait takes no real
	// time, and the test proves that Open gives up after the timeout.
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		_, err := boltstore.Open[*item](path, boltstore.WithLockTimeout(3*time.Second))
		if !errors.Is(err, boltstore.ErrLocked) {
			t.Fatalf("second Open: %v, want ErrLocked", err)
		}
		if waited := time.Since(start); waited < 2*time.Second || waited > 4*time.Second {
			t.Fatalf("gave up after %v of fake time, want about the 3s timeout", waited)
		}
	})
	// The first store is unharmed and, once closed, frees the file.
	_, err := s.Create(t.Context(), "a", &item{})
	mustNot(t, err)
	mustNot(t, s.Close())
	openAt(t, path)
}

// lockProbe is the child process of TestSecondProcessIsLockedOutUntilClose,
// run by TestMain: it opens the file at path and prints whether it was
// locked. Any other outcome is status 1.
func lockProbe(path string) int {
	s, err := boltstore.Open[*item](path, boltstore.WithLockTimeout(100*time.Millisecond))
	switch {
	case errors.Is(err, boltstore.ErrLocked):
		os.Stdout.WriteString("locked\n")
	case err != nil:
		fmt.Fprintln(os.Stderr, "lock probe:", err)
		return 1
	default:
		os.Stdout.WriteString("opened\n")
		if err := s.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "lock probe:", err)
			return 1
		}
	}
	return 0
}

// While one process has the file open, another's Open fails with ErrLocked;
// once the first closes it, the other opens it.
func TestSecondProcessIsLockedOutUntilClose(t *testing.T) {
	s, path := openTemp(t)
	out := runLockHelper(t, path)
	if out != "locked\n" {
		t.Fatalf("second process: %q, want locked", out)
	}
	mustNot(t, s.Close())
	if out := runLockHelper(t, path); out != "opened\n" {
		t.Fatalf("second process after Close: %q, want opened", out)
	}
}

func runLockHelper(t *testing.T, path string) string {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+path)
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = os.Stderr
	mustNot(t, cmd.Run())
	line, _, _ := bytes.Cut(out.Bytes(), []byte("\n"))
	return string(line) + "\n"
}

// A file of random bytes is refused with ErrCorrupt and left unchanged.
func TestRandomBytesAreRefusedAsCorruptAndLeftUnchanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 100, 4096, 3 * 4096, 64 << 10} {
		path := filepath.Join(t.TempDir(), "random.db")
		junk := make([]byte, size)
		for i := range junk {
			junk[i] = byte(rng.Uint32())
		}
		mustNot(t, os.WriteFile(path, junk, 0o600))
		_, err := boltstore.Open[*item](path)
		if !errors.Is(err, boltstore.ErrCorrupt) {
			t.Errorf("%d random bytes: %v, want ErrCorrupt", size, err)
		}
		assertUnchanged(t, path, junk)
	}
}

// A bbolt file written by another program is refused with ErrFormat and
// left unchanged.
func TestForeignBoltFileIsRefusedWithErrFormatAndLeftUnchanged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "foreign.db")
	writeBolt(t, path, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("someone-else"))
		if err != nil {
			return err
		}
		return b.Put([]byte("k"), []byte("v"))
	})
	before, err := os.ReadFile(path)
	mustNot(t, err)
	if _, err := boltstore.Open[*item](path); !errors.Is(err, boltstore.ErrFormat) {
		t.Fatalf("foreign bbolt file: %v, want ErrFormat", err)
	}
	assertUnchanged(t, path, before)
}

// A file of a later format version is refused with ErrFormat.
func TestLaterFormatVersionIsRefusedWithErrFormat(t *testing.T) {
	path := filepath.Join(t.TempDir(), "future.db")
	writeBolt(t, path, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte("converge.meta"))
		if err != nil {
			return err
		}
		// The marker of a later version, with its checksum.
		text := []byte("converge-boltstore/99")
		crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
		crc.Write([]byte("format"))
		crc.Write(text)
		return b.Put([]byte("format"), append(crc.Sum(nil), text...))
	})
	if _, err := boltstore.Open[*item](path); !errors.Is(err, boltstore.ErrFormat) {
		t.Fatalf("future format: %v, want ErrFormat", err)
	}
}

// A history that lost its last record is refused with ErrCorrupt at Open.
func TestHistoryMissingARecordIsRefusedAsCorrupt(t *testing.T) {
	s, path := openTemp(t)
	for i := range 3 {
		_, err := s.Create(t.Context(), string(rune('a'+i)), &item{})
		mustNot(t, err)
	}
	mustNot(t, s.Close())
	writeBolt(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("converge.history")).Delete([]byte{0, 0, 0, 0, 0, 0, 0, 3})
	})
	if _, err := boltstore.Open[*item](path); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("history without its last record: %v, want ErrCorrupt", err)
	}
}

// TestBoltFileWithoutBucketsIsRefused: Open creates its files with the
// store's buckets in them, so a bbolt file without any (a root page whose
// elements were lost, say) is damage, not a new store to fill.
func TestBoltFileWithoutBucketsIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.db")
	writeBolt(t, path, func(*bolt.Tx) error { return nil })
	before, err := os.ReadFile(path)
	mustNot(t, err)
	if _, err := boltstore.Open[*item](path); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("bbolt file without buckets: %v, want ErrCorrupt", err)
	}
	assertUnchanged(t, path, before)
}

func writeBolt(t *testing.T, path string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	mustNot(t, err)
	mustNot(t, db.Update(fn))
	mustNot(t, db.Close())
}

func assertUnchanged(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	mustNot(t, err)
	if !bytes.Equal(got, want) {
		t.Fatalf("refused file %s was changed", path)
	}
}
