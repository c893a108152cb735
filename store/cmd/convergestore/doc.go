// Command convergestore is a store server: a process of its own that
// serves a bbolt store (store/boltstore) over HTTP (store/httpstore) with
// the API-server layer (store/apistore, JSONKind): finalizers and the
// deletion mark, a generation bumped by every spec change, status owned by
// the server, owner references. It is to converge's operators what the API
// server is to Kubernetes' controllers: the operators connect to it with
// httpstore.New (their controllers, leases and helpers work over the
// client unchanged), several operators on one machine share it, and
// desired state can be read and edited (convergectl) while they are down.
// A deletion made while no operator runs is carried out, through its
// finalizers, when one starts.
//
// The store is mounted at /store on a reconcile/manager server, beside the
// probes /healthz and /readyz: clients use http://HOST:PORT/store.
//
// # Install
//
// From a checkout of the repository, at its root (through its go.work):
//
//	go install ./store/cmd/convergestore
//
// Once the module is published:
//
//	go install github.com/converge-go/converge/store/cmd/convergestore@latest
//
// # Usage
//
//	convergestore -dir DIR [flags]
//
//	-dir DIR             the directory of the store file DIR/store.db and of
//	                     the generated token file DIR/token; created with
//	                     mode 0700 (required)
//	-addr ADDR           the TCP address to serve on (default 127.0.0.1:7017,
//	                     loopback only; port 0 picks a free port)
//	-tls-cert F, -tls-key F
//	                     serve HTTPS with this certificate chain and key (PEM)
//	-client-ca F         require a client certificate signed by one of these
//	                     CAs (PEM) on every connection, probes included
//	-token-file F        a read-write bearer token, read from F (repeatable)
//	-read-token-file F   a read-only bearer token, read from F (repeatable):
//	                     it may read and watch; its writes are refused (403)
//	-insecure-no-token   serve without any token (logged as a warning)
//	-insecure-permissions
//	                     use the places below even if another user may
//	                     change them (logged as a warning; see Places)
//	-allow-host NAME     a host name clients reach the server by, besides IP
//	                     literals and localhost (repeatable)
//	-lock-timeout D      how long to wait for a store file another process
//	                     holds (default 5s)
//	-kinds F             the kinds' rules, per key prefix (JSON, see
//	                     store/apistore/schema): a write that breaks its
//	                     kind's rule is refused naming the field, and
//	                     nothing is stored; defaults are filled in;
//	                     the file is declared to clients (/v1/kinds), whose
//	                     printer columns convergectl get -o table prints
//	-heartbeat D         how often watch streams carry a heartbeat (default
//	                     httpstore.DefaultHeartbeat, 5s)
//	-snapshot-dir S      save snapshots of the store into S (see Snapshots)
//	-snapshot-every D    how often to save one if the store changed (default
//	                     snapshot.DefaultEvery, 10m)
//	-snapshot-keep N     how many good snapshots to keep (default
//	                     snapshot.DefaultKeep, 10)
//	-recover-from S      recover a damaged store file from its store's
//	                     snapshots in the directory S, or from the file S
//	-restore-from F      make the store from the snapshot file F, or from the
//	                     change log in the directory F, in a -dir without a
//	                     store file, then serve it
//	-log-dir L           ship every change of the store into L (see Change
//	                     log)
//	-restore-to-revision R
//	                     with -restore-from L: restore the state at
//	                     revision R (default: the log's last)
//	-restore-to-time T   with -restore-from L: restore the state the log had
//	                     shipped at T (RFC 3339)
//
// Tokens: without -token-file, the read-write token is the one in
// DIR/token, generated the first time (32 bytes from crypto/rand, hex, mode
// 0600), so that it survives restarts and clients read it from there; given
// -token-file, or -insecure-no-token, the server removes a DIR/token left by
// an earlier run. Every token file, given or generated, must be a regular
// file of the server's user that no one else may read or write (mode 0600
// or stricter), not a symbolic link, holding one token of printable ASCII
// on one line; any other is refused (exit 1), and the error says why,
// never what the file holds. The same tokens guard the whole server (the
// manager's ServerOptions.Tokens; the probes answer their bare status
// without one) and the store (the handler's own read-write and read-only
// tokens). A Host header naming another host than an IP literal,
// localhost or an -allow-host name is refused, as is a write from a web
// page of another origin (see SECURITY.md).
//
// # Places
//
// Before it reads or writes anything, the server checks the places it is
// given by internal/privatefile's rule, the one its token files follow:
// -dir, -snapshot-dir and -log-dir (made with mode 0700 when missing, and their
// parents with them), the directory or file of -recover-from and
// -restore-from, and the -kinds, -client-ca and -tls-cert files, must be
// of the server's user or root, and not writable by group or others (0755
// or stricter); the -tls-key file must be the server's user's and no one
// else's to read or write (0600 or stricter). A store or a snapshot
// another user may change could be replaced, a snapshot planted in a
// shared -recover-from directory would be the one a recovery restores,
// and whoever may change the kinds' rules or the client CAs decides what
// the server admits and whom it lets in. Any other place is refused (exit 1) with an error
// naming the flag, the path, its mode or owner and the fix (chmod 700 DIR,
// chmod 600 KEY, chown); -insecure-permissions accepts it with a warning
// instead. Only the place itself is checked, not the directories above it.
//
// On start, once it listens, convergestore prints on standard output the
// URL it serves, the store file and the token file (never a token):
//
//	convergestore: serving http://127.0.0.1:7017/store
//	convergestore: store file /var/lib/app/store.db
//	convergestore: read-write token in /var/lib/app/token
//
// Logs go to standard error. It serves until SIGINT or SIGTERM, then
// stops: watch streams end at once (their clients resume on the next
// server at the URL), requests in flight finish, and the store file is
// closed.
//
// # Snapshots
//
// With -snapshot-dir S the server saves a snapshot of the store
// (store/snapshot) into S at start and then every -snapshot-every in which
// the store changed, and keeps the -snapshot-keep good ones of its store
// with the highest revisions: files named snapshot-TIME-rREVISION.snap,
// each written whole or not at all. Snapshots are chosen and kept by the
// store's identity, then revision, never by the time in them: S may be
// shared by several servers, none removes another's snapshots, and one
// stamped by a clock set wrong neither wins nor pushes out newer ones.
// convergectl snapshot save FILE saves one of any served store, and
// convergectl snapshot inspect FILE checks one.
//
// -recover-from S opens the store file and, if it is damaged, moves it
// aside (store.db.damaged-TIME, never deleted), restores in its place the
// good snapshot in the directory S of the damaged store (the identity its
// file still tells) with the highest revision (not above the damaged
// file's, when it still tells it: one above is of another history of the
// store, and is named in a warning), and serves it, saying on
// standard output which snapshot it restored, where the damaged file went
// and which revisions were lost. Without a good snapshot of its store in
// S (none, only other stores', or the damaged file's identity unreadable)
// it exits 3 and leaves the damaged file as it is, saying so. A snapshot
// of another store is restored only when named: -recover-from FILE
// restores the snapshot file FILE whatever store it is of, and says that
// what was lost is not known. Giving the same directory to -snapshot-dir
// and -recover-from makes a server that recovers from its own snapshots:
// it loses at most the writes of the last -snapshot-every.
//
// -restore-from F makes the store of a -dir that holds no store file yet
// from the snapshot file F, then serves it (a -dir with a store file is
// refused, exit 1: the restore is done once, then the flag is dropped).
// Both restores refuse a snapshot holding what the server could not serve,
// naming the key or the revision, and make nothing: a value that is not a
// JSON object the layer reads (every write of its key would fail), or a
// revision whose bump would pass snapshot.MaxRevision.
//
// Either way the restored store is another store, by the rule of the
// store package's doc: a new identity, so that controllers that compare
// identities (prune) judge its desired set afresh, and revisions above the
// snapshot's plus boltstore.DefaultRevisionBump, every earlier one
// compacted, so that a client resuming a watch from before the restore
// re-lists.
//
// # Change log
//
// With -log-dir L the server ships every change of its store into L
// (store/changelog): each change, synced within
// changelog.DefaultSyncEvery, into checksummed segments. The log begins
// with a snapshot of the store, saved into -snapshot-dir (L without it),
// and keeps every segment a restore from the oldest snapshot there needs:
// with -snapshot-dir and -snapshot-keep N, the log covers the last N
// snapshots (without -snapshot-dir, the log's own first snapshot stays the
// oldest, and nothing is removed). A server
// whose disk is lost thus loses the changes not yet shipped, a fraction
// of a second of writes, instead of those since its last snapshot.
//
// -restore-from L (a directory) makes the store of a new -dir from the
// log in L and the snapshots in L and -snapshot-dir: to the last revision
// the log holds, to -restore-to-revision R (the state the store had at R,
// every change up to it and none after), or to -restore-to-time T (every
// change the log had received by T). It says on standard output which
// revision it restored, from which snapshot and how many changes. A log
// ending in a torn record (a crash while it was written) is restored up
// to the record before it, with a warning; a point the log does not cover
// (before it began, past its end, in a gap its store's history left) or
// past damage in it is refused (exit 1) and makes nothing. The restored
// store is another store, as from a snapshot; given -log-dir L again, it
// goes on shipping into L under its new identity.
//
// # Example session
//
//	$ convergestore -dir /tmp/app &
//	convergestore: serving http://127.0.0.1:7017/store
//	convergestore: store file /tmp/app/store.db
//	convergestore: read-write token in /tmp/app/token
//	$ echo '{"metadata":{"finalizers":["app/cleanup"]},"spec":{"replicas":3}}' |
//	    convergectl -server http://127.0.0.1:7017/store -token-file /tmp/app/token put app/web
//	{"key":"app/web","revision":1,"createRevision":1,"value":{"metadata":{"generation":1,"finalizers":["app/cleanup"]},"spec":{"replicas":3}}}
//	$ convergectl -server http://127.0.0.1:7017/store -token-file /tmp/app/token list
//	{"revision":1,"objects":[{"key":"app/web","revision":1,"createRevision":1,"value":{"metadata":{"generation":1,"finalizers":["app/cleanup"]},"spec":{"replicas":3}}}]}
//	$ convergectl -server http://127.0.0.1:7017/store -token-file /tmp/app/token delete app/web
//	{"key":"app/web","revision":2,"marked":true}
//	convergectl: app/web: marked for deletion; waiting for finalizers [app/cleanup]
//
// The delete only marks app/web (metadata.deletion): it stays readable
// until a controller's cleanup removes its finalizer (reconcile/kit/resource's
// Finalize), which removes it. convergectl's apply and status write a
// resource's spec and its status apart; the server keeps the generation
// and the status its own whoever writes. An apply (/v1/apply) changes only
// what its document states: the finalizers and owners controllers set
// survive a document that holds only the spec, and an apply never
// completes a deletion.
//
// # Exit codes
//
//	0  stopped by SIGINT or SIGTERM, or -h
//	1  an error: an unsafe token file or place, an address in use, a bad
//	   certificate
//	2  a command line that cannot be read: an unknown flag, a malformed
//	   value (-addr, -allow-host), contradictory or missing flags
//	3  the store file is damaged (boltstore.ErrCorrupt), and not recovered
//	   (-recover-from), or is not a store file (boltstore.ErrFormat); it is
//	   left as it is
//	4  another process holds the store file (boltstore.ErrLocked) for longer
//	   than -lock-timeout
//
// Errors are printed on standard error, one line, prefixed
// "convergestore:"; a command line that cannot be read is followed by the
// usage.
package main
