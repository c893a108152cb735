// Command convergectl reads and changes a converge store served over HTTP
// (store/httpstore), as kubectl does an API server's: any daemon that
// mounts httpstore.NewHandler, such as examples/jobs, is its server.
//
// Until the module is published, install it from a checkout of the
// repository, at its root:
//
//	go install ./store/cmd/convergectl
//
// # Usage
//
//	convergectl [flags] get KEY                  print the object as one JSON line (-o spec|status|metadata: that part; -o table: its kind's printer columns)
//	convergectl [flags] list [-keys] [-o table] [PREFIX]
//	                                             print the objects under PREFIX and the list's revision (-o table: their kinds' printer columns)
//	convergectl [flags] put [-create] [-rev R] KEY [FILE]
//	                                             write the JSON value in FILE (default or "-": stdin)
//	convergectl [flags] apply [-patch] KEY [FILE]
//	                                             write what a resource states, keeping its status and the
//	                                             finalizers and owners it does not name; else merge a
//	                                             JSON merge patch (RFC 7386)
//	convergectl [flags] status KEY [FILE]        write a resource's status alone, keeping its spec
//	convergectl [flags] delete [-rev R] KEY      delete the key at its latest revision or at R, or mark
//	                                             it for its finalizers (-propagation P)
//	convergectl [flags] watch [-after R] [PREFIX] print changes as JSON lines until interrupted
//	convergectl [flags] snapshot save FILE       save the whole store to FILE as a snapshot
//	convergectl snapshot inspect FILE            check the snapshot in FILE and print its header (offline)
//
// Each command's flags come before its arguments: get -o PART KEY, delete
// -propagation P KEY ("convergectl COMMAND -h" lists them).
//
// Flags, before the command:
//
//	-server URL    the store's URL, with the path it is mounted at, such as
//	               http://127.0.0.1:7007/store (examples/jobs' default); else
//	               $CONVERGE_SERVER. There is no default: with neither,
//	               convergectl refuses to run (exit 2) rather than guess.
//	-token T       bearer token; -token-file FILE reads it from a file, which
//	               must be yours, mode 0600 and not a symbolic link, and hold
//	               one token (as a store server's DIR/token does); with
//	               neither, $CONVERGE_TOKEN is read. The token is never printed.
//	-cacert FILE   PEM certificates to verify an https server with (default: the system's)
//	-cert FILE, -key FILE   a client certificate and its key, for servers that require one;
//	               a key others may read or change, or another user's, is
//	               refused, as ssh refuses one (chmod 600 FILE); so is a
//	               -cacert or -cert file group or others may change, or of a
//	               user other than yours or root (chmod 644 FILE)
//	-insecure-permissions   use such a file, with a warning
//	-timeout D     bound on each request (default 30s; 0: no bound; watch is
//	               bounded only by an interrupt)
//	-max-value-size N   the largest value put, apply and status read, in bytes
//	               (default store.DefaultMaxValueSize, the server's default)
//
// Objects are printed as {"key","revision","createRevision","value"};
// delete prints {"key","revision"}, with "marked": true when it
// only marked the object. list prints {"revision":R,"objects":[...]},
// where R is the store revision the listing reflects (a watch from R
// misses nothing after it), and with -keys one "KEY REVISION" line per
// object, KEY quoted as by strconv.Quote when it holds a space, a quote, a
// backslash or a character that is not printable (a newline, a tab), so
// that every object is one line, its revision the last field, and a line
// that starts with a quote holds a quoted key. watch prints one line per
// change, {"type":"created"|"updated"|"deleted","key",...,"value"} (a
// deletion carries the last value), from -after R (default: the current
// revision, so only changes to come), and exits 0 on SIGINT or SIGTERM.
//
// put creates the key if it does not exist, else replaces its value with a
// compare-and-swap against the revision it has just read, retried if
// another writer got there first. With -create it only creates; with -rev R
// (R at least 1) it only updates, and only if the key is still at revision
// R. Over the layer, put writes a resource's finalizers and owners as
// FILE has them (unlike apply, it removes those FILE lacks, and removing
// the last finalizer of a marked object deletes it). delete removes the key at its latest revision, or with -rev R only if
// it is still at R. Values must be valid JSON of at most -max-value-size
// bytes: a larger input is refused after reading one byte past the limit,
// never read whole.
//
// # Snapshots
//
// snapshot save FILE lists the whole store and writes it to FILE as a
// snapshot (store/snapshot): one consistent list, with its revision and
// the store's identity, checksummed. The file is written under a
// temporary name, synced and renamed, so FILE is whole or as it was; "-"
// writes the snapshot to stdout instead. It prints
// {"file","version","identity","revision","time","objects","checksum","ok"}.
// snapshot inspect FILE ("-": stdin) needs no server: it reads the whole
// snapshot, checks its count, order and checksum, and prints the same
// line; a damaged snapshot is printed as far as its header reads, with
// "ok": false, and exits 1. A snapshot restores offline into a new store:
// convergestore -restore-from FILE, or boltstore.Restore and
// etcdstore.Restore in a program.
//
// # Resources
//
// A resource is a JSON object of the shape of the API-server layer
// (store/apistore, apistore.JSONKind): "metadata" (generation, finalizers,
// the deletion mark, owners), "spec", and status members, every other
// member. A server that serves its store with the layer (an
// apistore.Store behind httpstore.NewHandler) keeps the layer's rules for
// every writer: the generation and the deletion mark are its own, a spec
// write keeps the status, a status write keeps the spec.
//
// apply KEY FILE, for a FILE that is a resource (a JSON object with a
// "metadata" or "spec" member), changes only what FILE states, by the
// layer's rule (apistore.Store.Apply), and creates the object if it is
// absent:
//
//   - FILE's spec replaces the stored one; a FILE without "spec" keeps it.
//     FILE's status members are never written.
//   - Finalizers and owners FILE names are added to the stored ones (an
//     owner replaces the stored one of its key); none is ever removed. So
//     a FILE that holds only the spec, as one usually does, keeps the
//     finalizers and owners controllers set.
//   - An apply never completes a deletion: an object marked for deletion
//     stays marked with its finalizers, and a FILE naming a finalizer it
//     lacks is refused (exit 1), as the layer refuses every finalizer
//     added after the mark.
//   - The generation is the stored one, bumped by one when the spec
//     changed; the deletion mark is the stored one.
//
// A server with the layer computes the write and retries it if another
// writer got there first; against one without, convergectl computes it
// as the layer would, with a compare-and-swap against the revision read,
// retried likewise. To remove a finalizer or an owner, put the whole
// object (which, removing the last finalizer of a marked object, deletes
// it), or patch its list with -patch.
//
// For any other FILE, or with -patch, apply reads the value, merges FILE
// as a JSON merge patch, and writes it back against the revision read,
// retried likewise (a missing key is then not found, exit 3). A patch that
// would remove the last finalizer of an object marked for deletion is
// refused (exit 1), and nothing is written: put the whole object for that.
//
// status KEY FILE writes the status members of FILE (metadata and spec in
// it are ignored) over the stored spec and metadata, through the server's
// layer, retried on conflict; a server without the layer refuses it
// (exit 1), and nothing is written.
//
// get -o table and list -o table print a table, as kubectl get does: the
// key, then the printer columns the server declares for the object's kind
// (convergestore -kinds: each kind's "columns", such as READY
// .conditions[Ready].status, REASON .conditions[Ready].reason and an AGE
// of type age; see store/apistore/schema.Column), "<none>" where an
// object has no value; a kind without columns, or a server that declares
// no kinds, shows the revision.
//
// get -o spec prints the spec (null if there is none), -o status an object
// of the status members (what status takes), -o metadata the metadata as
// apistore.Meta has it; -o json, the default, the whole object. A value
// that is no resource fails -o spec, status and metadata (exit 1).
//
// delete -propagation foreground or orphan (default background) marks a
// resource so that the garbage collector deletes its children first, or
// leaves them (a server without the layer refuses both, exit 1). When the
// object is only marked, because it has finalizers to run, the line
// printed says "marked": true and stderr names the finalizers: "KEY:
// marked for deletion; waiting for finalizers [a b]".
//
// Against a server without the layer, put, apply and delete write what they
// send as it is: apply computes the spec, status, metadata and generation
// as the layer would, but nothing enforces the layer's rules for other
// writers.
//
// # Tracing
//
// With $TRACEPARENT set to a W3C traceparent (as tracing tools hand a
// trace context to the programs they run), every write sends it in the
// traceparent header: the server records it with the revision the write
// makes, and the reconciles that revision wakes join that trace
// (reconcile/observe/convergeotel). A value that is not a traceparent is
// ignored.
//
// # Exit codes
//
//	0  done
//	1  an error: server unreachable (the outcome of a write is then unknown:
//	   get the key to find out), invalid input, an unexpected answer
//	2  a command line that cannot be read, or no server named
//	3  not found: the key does not exist
//	4  conflict: the key is not at the revision given (-rev), or a write
//	   guard failed
//	5  exists: put -create of a key that exists
//	6  refused: no token, an unknown token, or a read-only token writing
//
// Errors are printed on standard error, one line, prefixed "convergectl:";
// a command line that cannot be read is named on that line, and the usage
// follows. -h prints the usage on standard output and exits 0.
package main
