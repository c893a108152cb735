package boltstore

import (
	"errors"
	"path/filepath"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// A write whose function panics gets an error, and the committer keeps
// serving the writes after it (it is not left stuck as committing).
func TestCommitterSurvivesAPanickingWrite(t *testing.T) {
	db, err := bolt.Open(filepath.Join(t.TempDir(), "c.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := &committer{db: db}
	put := func(key string) func(*bolt.Tx) error {
		return func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			return b.Put([]byte(key), []byte("v"))
		}
	}
	err = c.run(func(*bolt.Tx) error { panic("codec exploded") })
	if err == nil {
		t.Fatal("a panicking write reported success")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Go(func() { errs <- c.run(put(string(rune('a' + i)))) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	err = db.View(func(tx *bolt.Tx) error {
		if n := tx.Bucket([]byte("b")).Stats().KeyN; n != 8 {
			return errors.New("not every write committed")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
