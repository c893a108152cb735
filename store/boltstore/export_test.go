package boltstore

import bolt "go.etcd.io/bbolt"

// DamageRecord stores a record too short to decode under key in the objects
// bucket of the open store s, for tests of damage that appears after Open
// (which would refuse a file holding it).
func DamageRecord[T any](s *Store[T], key string) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(objectsBucket).Put([]byte(key), []byte{1, 2, 3})
	})
}
