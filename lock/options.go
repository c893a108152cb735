package lock

import (
	"fmt"
	"log/slog"
	"time"
)

// DefaultTTL is the lease TTL when LeaseOptions.TTL is zero.
const DefaultTTL = 15 * time.Second

// LeaseOptions configure NewLease.
//
// # Timing
//
// The holder renews every RenewInterval and gives up leadership (cancels its
// Lock's context) once RenewDeadline has passed, on its own clock, since it
// sent its last successful renewal. A contender takes over only after it has
// seen the record unchanged for TTL on its own clock. Since the holder's
// deadline starts before the record changes and the contender's wait starts
// after it sees the change, the holder stops first provided
//
//	RenewDeadline / rate(holder) < TTL / rate(contender)
//
// where rate is how fast each host's monotonic clock runs compared with real
// time. Hence TTL / RenewDeadline (1.5 with the defaults) is the clock-rate
// ratio between any two hosts that the lease tolerates; real clocks differ
// by far less (parts per million), and the margin also absorbs scheduling
// delays. Work done after the context is cancelled is not covered by this
// bound: make the writes that matter carry the Lock's Guard.
type LeaseOptions struct {
	// Holder names this process in the record. Required.
	Holder string
	// TTL is how long contenders wait with the record unchanged before
	// taking over (0: DefaultTTL).
	TTL time.Duration
	// RenewInterval is how often the holder renews (0: TTL/3).
	RenewInterval time.Duration
	// RenewDeadline is how long after its last successful renewal the holder
	// gives up leadership (0: TTL*2/3). It must satisfy
	// TTL > RenewDeadline > RenewInterval > 0.
	RenewDeadline time.Duration
	// Logger receives the lease's logs (nil: discard).
	Logger *slog.Logger
}

// withDefaults fills in zero fields and checks the result.
func (o LeaseOptions) withDefaults() (LeaseOptions, error) {
	if o.Holder == "" {
		return o, fmt.Errorf("%w: lease options: Holder is required", ErrInvalid)
	}
	if o.TTL == 0 {
		o.TTL = DefaultTTL
	}
	if o.RenewInterval == 0 {
		o.RenewInterval = o.TTL / 3
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = o.TTL * 2 / 3
	}
	if !(o.TTL > o.RenewDeadline && o.RenewDeadline > o.RenewInterval && o.RenewInterval > 0) {
		return o, fmt.Errorf("%w: lease options: need TTL (%v) > RenewDeadline (%v) > RenewInterval (%v) > 0",
			ErrInvalid, o.TTL, o.RenewDeadline, o.RenewInterval)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}
