package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/converge-go/converge/reconcile/shard"
)

// ownerAt is a bucket's owner from a revision on ("" after a delete).
type ownerAt struct {
	Revision int64
	Owner    string
}

// ownerHistory maps each bucket to its owners in revision order.
type ownerHistory map[int][]ownerAt

// at returns the owner record of bucket b in force at revision rev.
func (h ownerHistory) at(b int, rev int64) (ownerAt, bool) {
	hist := h[b]
	i := sort.Search(len(hist), func(i int) bool { return hist[i].Revision > rev })
	if i == 0 {
		return ownerAt{}, false
	}
	return hist[i-1], true
}

// readOwnerHistory reads every change of the owner records under prefix,
// from etcd's history (the run compacts nothing), up to the current
// revision.
func readOwnerHistory(ctx context.Context, cli *clientv3.Client, prefix string) (ownerHistory, error) {
	ownerPrefix := prefix + shardPrefix + "owner/"
	now, err := cli.Get(ctx, ownerPrefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return nil, err
	}
	end := now.Header.Revision
	h := ownerHistory{}
	wctx, cancel := context.WithCancel(clientv3.WithRequireLeader(ctx))
	defer cancel()
	watch := cli.Watch(wctx, ownerPrefix, clientv3.WithPrefix(), clientv3.WithRev(1))
	// A progress report, sent once the watch has caught up, ends the
	// loop even if no owner record changed after the Get.
	if err := cli.RequestProgress(wctx); err != nil {
		return nil, err
	}
	for resp := range watch {
		if err := resp.Err(); err != nil {
			return nil, err
		}
		for _, ev := range resp.Events {
			b, err := strconv.Atoi(strings.TrimPrefix(string(ev.Kv.Key), ownerPrefix))
			if err != nil {
				return nil, fmt.Errorf("owner record %q: %w", ev.Kv.Key, err)
			}
			at := ownerAt{Revision: ev.Kv.ModRevision}
			if ev.Type == clientv3.EventTypePut {
				var rec struct {
					Owner string `json:"owner"`
				}
				if err := json.Unmarshal(ev.Kv.Value, &rec); err != nil {
					return nil, fmt.Errorf("owner record %q: %w", ev.Kv.Key, err)
				}
				at.Owner = rec.Owner
			}
			h[b] = append(h[b], at)
		}
		if resp.Header.Revision >= end {
			return h, nil
		}
	}
	return nil, fmt.Errorf("owner history: watch ended: %w", ctx.Err())
}

// verdict is what the checker found in a run's records.
type verdict struct {
	// Reconciles counts the reconciles that ended; Writes the accepted
	// writes checked against the owner history.
	Reconciles, Writes int
	// Overlaps lists a key reconciled by two replicas at once, neither
	// of them frozen: must be empty.
	Overlaps []string
	// FrozenOverlaps counts reconciles of a replica frozen (SIGSTOP)
	// mid-reconcile that another replica's reconcile of the key began
	// during: the frozen one can no longer stop itself, which is why its
	// writes must be refused; they are checked like every other write.
	FrozenOverlaps int
	// Unfenced lists accepted writes whose writer did not own the key's
	// bucket, at the claimed epoch, at the write's revision: must be empty.
	Unfenced []string
	// Refused counts writes refused with store.ErrGuardFailed (reconciles
	// and late writes).
	Refused int
	// Unended lists reconciles with a begin and no end, of a replica that
	// neither was killed nor left: must be empty (a lost record would
	// otherwise hide an overlap).
	Unended []string
}

// ok reports whether the guarantees held.
func (v verdict) ok() bool {
	return len(v.Overlaps) == 0 && len(v.Unfenced) == 0 && len(v.Unended) == 0
}

func (v verdict) String() string {
	return fmt.Sprintf("%d reconciles, %d accepted writes checked: %d overlaps, %d writes from a non-owner, %d unended; %d writes fenced off; %d overlaps with a frozen replica",
		v.Reconciles, v.Writes, len(v.Overlaps), len(v.Unfenced), len(v.Unended), v.Refused, v.FrozenOverlaps)
}

// open is a reconcile in progress in the checker.
type open struct {
	who    string
	frozen bool // its replica was frozen while it ran
}

// check reads the records in file order: for each key, the reconciles in
// progress (a begin without its end; a replica's kill ends them all), and
// flags a begin while another replica's reconcile of the key is in
// progress. Each accepted write must come from the owner of the key's
// bucket, at the claimed epoch, as etcd's history has it at the write's
// revision.
func check(recs []record, history ownerHistory, buckets int) verdict {
	var v verdict
	inflight := map[string][]open{} // by key
	frozen := map[string]bool{}
	closeAll := func(who string) {
		for key, ins := range inflight {
			kept := ins[:0]
			for _, o := range ins {
				if o.who != who {
					kept = append(kept, o)
				}
			}
			inflight[key] = kept
		}
	}
	for _, r := range recs {
		switch r.Kind {
		case kindStop:
			frozen[r.Key] = true
			for key, ins := range inflight {
				for i := range ins {
					if ins[i].who == r.Key {
						inflight[key][i].frozen = true
					}
				}
			}
		case kindCont:
			frozen[r.Key] = false
		case kindKill:
			closeAll(r.Key)
		case kindBegin:
			for _, o := range inflight[r.Key] {
				if o.who == r.Who {
					continue // the controller's own exclusivity is not what this checks
				}
				if o.frozen {
					v.FrozenOverlaps++
					continue
				}
				v.Overlaps = append(v.Overlaps, fmt.Sprintf("%s: %s began while %s reconciled it (%v)", r.Key, r.Who, o.who, r.At.Format("15:04:05.000")))
			}
			inflight[r.Key] = append(inflight[r.Key], open{who: r.Who, frozen: frozen[r.Who]})
		case kindEnd:
			v.Reconciles++
			if r.Note == outGuard {
				v.Refused++
			}
			ins := inflight[r.Key]
			for i, o := range ins {
				if o.who == r.Who {
					inflight[r.Key] = append(ins[:i], ins[i+1:]...)
					break
				}
			}
		case kindLate:
			if r.Note == outGuard {
				v.Refused++
			}
		case kindWrite:
			v.Writes++
			b := shard.Bucket(r.Key, buckets)
			o, ok := history.at(b, r.N2)
			if !ok || o.Owner != r.Who || o.Revision != r.N1 {
				v.Unfenced = append(v.Unfenced, fmt.Sprintf("%s (bucket %d) written by %s under epoch %d at revision %d; owner then: %+v",
					r.Key, b, r.Who, r.N1, r.N2, o))
			}
		}
	}
	for key, ins := range inflight {
		for _, o := range ins {
			v.Unended = append(v.Unended, key+" by "+o.who)
		}
	}
	sort.Strings(v.Unended)
	return v
}
