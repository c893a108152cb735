package store

import (
	"context"
	"fmt"
)

// diffPager is a Differ that can give its net change a page at a time,
// into a slice its caller reuses: a watcher catching up from a burst holds
// one page of events, not one event for every key changed, and holds the
// store's lock for a page at a time.
type diffPager[T any] interface {
	// diffPage appends to buf[:0], in revision order, the events of the
	// net change under prefix after revision after: all of them if whole,
	// else at most a page, as many as the store sets. An event is Created
	// if its key was created after since (since ≤ after: the revision the
	// catch-up began from). It returns them with upto, the revision up to
	// which the change is reported, and now, the store's revision: the
	// page is the rest of the change when upto is now, else the next page
	// is the one after upto. Only a whole page is a snapshot: a key whose
	// write at upto or before was overwritten after upto is in a later
	// page. Its errors are Diff's, ErrCompacted when a delete after after
	// is forgotten.
	diffPage(ctx context.Context, prefix string, since, after int64, whole bool, buf []Event[T]) (page []Event[T], upto, now int64, err error)
}

var _ diffPager[int] = (*Memory[int])(nil)

// diffPageSize is how many events a catch-up reads from a Memory store at
// a time (diffPager), 256 KiB of events at most.
const diffPageSize = 4096

// diffPage reads a page of the net change (diffPager). A store that keeps
// no write order yet (fewer than orderFrom keys) gives the whole change
// in one page.
func (m *Memory[T]) diffPage(ctx context.Context, prefix string, since, after int64, whole bool, buf []Event[T]) ([]Event[T], int64, int64, error) {
	if err := ValidatePrefix(prefix); err != nil {
		return nil, 0, 0, err
	}
	if err := ValidateRevision(since); err != nil {
		return nil, 0, 0, err
	}
	if after < since {
		return nil, 0, 0, fmt.Errorf("%w: a page after revision %d of a change since %d", ErrInvalid, after, since)
	}
	if err := m.begin(ctx); err != nil {
		return nil, 0, 0, err
	}
	m.mu.RLock()
	if !m.order.built && len(m.objects)+len(m.tombs.byKey) >= m.cfg.orderFrom {
		m.mu.RUnlock()
		m.mu.Lock()
		defer m.mu.Unlock()
		if !m.closed && !m.order.built {
			m.buildOrder()
		}
	} else {
		defer m.mu.RUnlock()
	}
	if err := m.usable(); err != nil {
		return nil, 0, 0, err
	}
	if after >= m.rev {
		return buf[:0], m.rev, m.rev, nil
	}
	if after < m.tombs.floor {
		return nil, 0, 0, fmt.Errorf("%w: diff after revision %d, deletes are known after %d", ErrCompacted, after, m.tombs.floor)
	}
	if !m.order.built {
		return m.scanChanged(prefix, since, after, buf[:0]), m.rev, m.rev, nil
	}
	limit := 0
	if !whole {
		limit = m.cfg.diffPage
	}
	page, upto := m.changedAfter(prefix, since, after, limit, buf[:0])
	return page, upto, m.rev, nil
}
