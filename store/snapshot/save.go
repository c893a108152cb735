package snapshot

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/converge-go/converge/store"
)

// Save writes a snapshot of every object of src to w, in the format of the
// package doc, and returns its Info. The snapshot is one consistent List:
// every object at the revision it reports, none newer. It costs one List of
// the whole store, held in memory while it is written, and one read of the
// store's identity before and after it.
//
// Save does not sync or close w: WriteFile makes a file that is whole or
// absent. It fails with an error matching store.ErrInvalid for a nil
// argument or a value longer than MaxValueSize (nothing is written), with
// the store's error if it cannot be listed (nothing is written), and with
// w's error, after which what w holds is no good snapshot.
func Save(ctx context.Context, w io.Writer, src Source) (Info, error) {
	if src == nil || w == nil {
		return Info{}, fmt.Errorf("snapshot: %w: nil source or writer", store.ErrInvalid)
	}
	c, err := src.capture(ctx)
	if err != nil {
		return Info{}, err
	}
	return write(w, c, time.Now())
}

// write writes the snapshot of c, taken at now, to w.
func write(w io.Writer, c capture, now time.Time) (Info, error) {
	info := Info{
		Version:  Version,
		Identity: c.identity,
		Revision: c.rev,
		Time:     now.UTC().Round(0),
		Count:    len(c.objects),
	}
	bw := bufio.NewWriter(w)
	h := sha256.New()
	body := io.MultiWriter(bw, h)
	err := encodeLine(body, headerLine{
		Snapshot: formatName, Version: info.Version, Identity: info.Identity,
		Revision: info.Revision, Time: info.Time, Count: info.Count,
	})
	for _, o := range c.objects {
		if err != nil {
			break
		}
		err = encodeLine(body, objectLine{Key: o.Key, Value: o.Value, Revision: o.Revision, CreateRevision: o.CreateRevision})
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if err == nil {
		err = encodeLine(bw, trailerLine{SHA256: sum})
	}
	if err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return Info{}, fmt.Errorf("snapshot: write: %w", err)
	}
	info.Checksum = checksumPrefix + sum
	return info, nil
}
