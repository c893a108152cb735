// Package snapshot saves a consistent snapshot of any store.Store
// (memory, bbolt, etcd, a served store's client) to a file, and reads it
// back, so that the desired state a reconciliation loop keeps in its
// store outlives the store: a bbolt file damaged beyond use, an etcd
// cluster lost. store/boltstore and store/etcdstore restore a snapshot
// into a new store (their Restore) by the rule of the store package's doc
// (# Snapshots and restores): a restored store has a new identity, and no
// revision a client saw before the restore can be resumed from.
//
// Save writes a snapshot to an io.Writer, WriteFile to a file that is
// whole or absent; Read, NewReader and CheckFile read and check one (with
// ValueChecks, what the store restored into could not serve is refused);
// Latest finds the good snapshot of a store's identity with the highest
// revision in a directory (LatestAtMost, at or below a revision) and
// Retain keeps its few highest; a Saver saves one every interval while the
// store moves. A Source is what a snapshot is taken of: Bytes(s) for a
// byte store, Typed(s, codec) for any other, State(identity, rev, objs)
// for a state held in memory (store/changelog's replay of a change log,
// which a restore then reads as any snapshot).
//
// Snapshots are chosen by identity, then revision, never by the clock: the
// time in a header is when a process's clock said it was taken, and a
// clock set wrong must not make a stale snapshot win. A directory may be
// shared by several stores; each one's snapshots are chosen and kept
// apart, and a snapshot of another identity is restored only when named by
// its file.
//
// # Format
//
// A snapshot is text, one JSON object per line, in format version 1:
//
//	{"snapshot":"converge","version":1,"identity":"bolt:…","revision":42,"time":"2026-12-02T10:00:00.5Z","count":2}
//	{"key":"app/a","value":"eyJuIjoxfQ==","revision":40,"createRevision":3}
//	{"key":"app/b","value":"e30=","revision":42,"createRevision":42}
//	{"sha256":"5f6c…"}
//
// The header names the format and its version, the identity of the store
// saved (absent if it has none), the revision the snapshot reflects, when
// it was taken (RFC 3339, UTC) and how many objects follow. Each object
// line holds a key, its value's bytes (base64, standard encoding), its
// revision and its create revision, in strictly increasing key order. The
// trailer holds the hex SHA-256 of every byte before it, newlines
// included; nothing follows its newline. A reader refuses a member it
// does not know, a line longer than an object of MaxValueSize bytes can
// make, and a version other than its own (ErrFormat): a new version of the
// format is a new number.
//
// # Guarantees
//
// Each is proven by the test named after it:
//
//   - A snapshot is one consistent List: read back, it holds every object
//     of the store at the revision it reports, with its key, value bytes
//     and revisions, and the store's identity
//     (TestASnapshotReadsBackAsTheListItWasSavedFrom); a typed store's
//     values are its codec's bytes (TestATypedStoreIsSavedAsItsCodecsBytes).
//   - A truncated or damaged snapshot is an error matching ErrDamaged (or
//     ErrFormat, if the damage is in the version), never half-read as
//     good and never a panic: Read returns no object of it, and a Reader's
//     last Next returns the error instead of io.EOF
//     (TestEveryTruncationAndEveryDamagedBitIsAnError).
//   - WriteFile leaves its path whole or as it was, and no temporary file
//     after an error; a file a crash left half-written is never taken for
//     a snapshot (TestWriteFileLeavesThePathWholeOrAsItWas).
//   - Latest chooses, of a directory's snapshots of the identity asked
//     for, the good one with the highest revision (the last name among
//     equal ones), whatever the times in the headers; it never chooses one
//     of another identity, names the damaged files it skipped and the
//     others' it passed over, and without a good one of its own fails with
//     ErrNoSnapshot, and ErrIdentity if others' are there; LatestAtMost
//     chooses so at or below a revision, naming those above it (another
//     history of the store)
//     (TestLatestChoosesByIdentityThenRevisionNeverByTheClock,
//     TestLatestReturnsTheNewestGoodSnapshotAndNamesTheDamagedOnes).
//   - Retain keeps the highest N good snapshots of its identity and
//     removes only lower ones of it: never one of another identity, never
//     a damaged file above them
//     (TestRetainKeepsTheHighestRevisionsOfItsIdentityOnly,
//     TestRetainKeepsTheNewestGoodSnapshotsAndRemovesOnlyOlderOnes).
//   - A Saver saves at once and then every interval only when the store's
//     revision moved, keeps the newest Keep of its store, goes on after a
//     failed save and returns nil when its context ends
//     (TestSaverSavesOnlyWhenTheRevisionMovedAndKeepsTheNewest,
//     TestSaverGoesOnAfterAFailedSave); it never removes the snapshot it
//     just saved, another store's, or one of its store above the store's
//     revision, whatever the clocks that stamped them
//     (TestASaverKeepsWhatItSavesWhateverTheClocksAndTheOtherStores).
//   - A value a ValueCheck refuses fails the read at its object, with an
//     error matching ErrUnservable and store.ErrInvalid naming the key, so
//     that a restore writes nothing
//     (TestAValueACheckRefusesFailsTheReadNamingTheKey).
//
// Errors match ErrDamaged, ErrFormat, ErrNoSnapshot, ErrIdentity,
// ErrUnservable, store.ErrInvalid (bad input) or the store's and the file system's own errors, under
// errors.Is.
package snapshot
