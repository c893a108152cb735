package boltstore_test

import (
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/converge-go/converge/store"
	"github.com/converge-go/converge/store/boltstore"
	bolt "go.etcd.io/bbolt"
)

// identityOf returns s's identity, failing t on an error or an empty one.
func identityOf(t *testing.T, s *boltstore.Store[*item]) string {
	t.Helper()
	id, err := s.Identity(t.Context())
	mustNot(t, err)
	if id == "" {
		t.Fatal("empty identity")
	}
	return id
}

// sealed is a meta record as the store writes it: a CRC-32C of the key
// and the text, then the text.
func sealed(key, text string) []byte {
	crc := crc32.New(crc32.MakeTable(crc32.Castagnoli))
	crc.Write([]byte(key))
	crc.Write([]byte(text))
	return append(crc.Sum(nil), text...)
}

// The identity is made with the file: the same from every call and after
// every reopen, whatever was written and deleted meanwhile; another file
// (even one made at the same path after the first was removed) has
// another.
func TestIdentityIsMadeWithTheFileAndKeptAcrossReopens(t *testing.T) {
	ctx := t.Context()
	s, path := openTemp(t)
	id := identityOf(t, s)
	obj, err := s.Create(ctx, "a", &item{N: 1})
	mustNot(t, err)
	_, err = s.Delete(ctx, "a", obj.Revision)
	mustNot(t, err)
	if again := identityOf(t, s); again != id {
		t.Fatalf("identity changed from %q to %q", id, again)
	}
	mustNot(t, s.Close())
	for range 2 {
		s = openAt(t, path)
		if again := identityOf(t, s); again != id {
			t.Fatalf("identity %q after reopen, was %q", again, id)
		}
		mustNot(t, s.Close())
	}

	other, _ := openTemp(t)
	if identityOf(t, other) == id {
		t.Fatal("two files have one identity")
	}
	mustNot(t, os.Remove(path))
	if identityOf(t, openAt(t, path)) == id {
		t.Fatal("a new file at the path of a removed one has its identity")
	}
}

// A copy of the file is the same store: it has the identity of the file
// copied (what an identity does not tell apart).
func TestCopyOfTheFileHasItsIdentity(t *testing.T) {
	s, path := openTemp(t)
	id := identityOf(t, s)
	mustNot(t, s.Close())
	data, err := os.ReadFile(path)
	mustNot(t, err)
	copied := filepath.Join(t.TempDir(), "copy.db")
	mustNot(t, os.WriteFile(copied, data, 0o600))
	if got := identityOf(t, openAt(t, copied)); got != id {
		t.Fatalf("copy has identity %q, the original %q", got, id)
	}
}

// A damaged, malformed or missing identity record fails Open with
// ErrCorrupt and leaves the file as it is: never a new identity made
// silently for a file that had one.
func TestDamagedIdentityIsRefusedAsCorruptAndLeftUnchanged(t *testing.T) {
	for name, damage := range map[string]func(meta *bolt.Bucket) error{
		"a byte flipped": func(meta *bolt.Bucket) error {
			rec := append([]byte(nil), meta.Get([]byte("identity"))...)
			rec[len(rec)-1] ^= 1
			return meta.Put([]byte("identity"), rec)
		},
		"malformed, with a valid checksum": func(meta *bolt.Bucket) error {
			return meta.Put([]byte("identity"), sealed("identity", "bolt:not-an-identity"))
		},
		"missing": func(meta *bolt.Bucket) error { return meta.Delete([]byte("identity")) },
	} {
		t.Run(name, func(t *testing.T) {
			s, path := openTemp(t)
			mustNot(t, s.Close())
			writeBolt(t, path, func(tx *bolt.Tx) error { return damage(tx.Bucket([]byte("converge.meta"))) })
			before, err := os.ReadFile(path)
			mustNot(t, err)
			if _, err := boltstore.Open[*item](path); !errors.Is(err, boltstore.ErrCorrupt) {
				t.Fatalf("identity %s: Open returned %v, want ErrCorrupt", name, err)
			}
			assertUnchanged(t, path, before)
		})
	}
}

// A file written in format 2, which had no identity, keeps its objects and
// gets an identity at its first Open, kept from then on.
func TestFormat2FileGetsAnIdentityAtOpenAndKeepsIt(t *testing.T) {
	ctx := t.Context()
	s, path := openTemp(t)
	obj, err := s.Create(ctx, "a", &item{N: 7})
	mustNot(t, err)
	mustNot(t, s.Close())
	writeBolt(t, path, func(tx *bolt.Tx) error {
		meta := tx.Bucket([]byte("converge.meta"))
		return errors.Join(
			meta.Delete([]byte("identity")),
			meta.Put([]byte("format"), sealed("format", "converge-boltstore/2")),
		)
	})
	s = openAt(t, path)
	id := identityOf(t, s)
	got, err := s.Get(ctx, "a")
	mustNot(t, err)
	if got.Revision != obj.Revision || *got.Value != (item{N: 7}) {
		t.Fatalf("converted object %+v, want %+v", got, obj)
	}
	mustNot(t, s.Close())
	if again := identityOf(t, openAt(t, path)); again != id {
		t.Fatalf("identity %q after reopen, was %q", again, id)
	}
}

// A format 2 file that holds an identity record was written by something
// else than this package: ErrCorrupt, not a silent upgrade.
func TestFormat2FileWithAnIdentityIsRefusedAsCorrupt(t *testing.T) {
	s, path := openTemp(t)
	mustNot(t, s.Close())
	writeBolt(t, path, func(tx *bolt.Tx) error {
		return tx.Bucket([]byte("converge.meta")).Put([]byte("format"), sealed("format", "converge-boltstore/2"))
	})
	if _, err := boltstore.Open[*item](path); !errors.Is(err, boltstore.ErrCorrupt) {
		t.Fatalf("format 2 file with an identity: %v, want ErrCorrupt", err)
	}
}

// A closed Store refuses Identity with store.ErrUnavailable, as every
// call.
func TestIdentityOfAClosedStoreIsUnavailable(t *testing.T) {
	s, _ := openTemp(t)
	mustNot(t, s.Close())
	if _, err := s.Identity(t.Context()); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("Identity after Close: %v, want ErrUnavailable", err)
	}
}
