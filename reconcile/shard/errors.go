package shard

import (
	"github.com/converge-go/converge/internal/invalid"
	"github.com/converge-go/converge/internal/running"
)

// ErrInvalid is returned for invalid input (bad Options, a nil store or
// context, a Replica not made by New). It matches every converge package's
// invalid-input sentinel, store.ErrInvalid included, under errors.Is.
var ErrInvalid = invalid.New("shard")

// ErrAlreadyRunning is returned by Replica.Run called while the replica
// runs. It matches the ErrAlreadyRunning of every converge package,
// reconcile.ErrAlreadyRunning included, under errors.Is.
var ErrAlreadyRunning error = running.New("shard")
