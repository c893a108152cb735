package shard

import "github.com/converge-go/converge/internal/invalid"

// ErrInvalid is returned for invalid input (bad Options, a nil store or
// context, a Replica not made by New). It matches every converge package's
// invalid-input sentinel, store.ErrInvalid included, under errors.Is.
var ErrInvalid = invalid.New("shard")
