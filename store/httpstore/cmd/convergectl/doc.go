// Command convergectl reads and changes a converge store served over HTTP
// (store/httpstore), as kubectl does an API server's: any daemon that
// mounts httpstore.NewHandler, such as examples/jobs, is its server.
//
// Until the module is published, install it from a checkout of the
// repository, at its root:
//
//	go install ./store/httpstore/cmd/convergectl
//
// # Usage
//
//	convergectl [flags] get KEY                  print the object as one JSON line
//	convergectl [flags] list [-keys] [PREFIX]    print the objects under PREFIX and the list's revision
//	convergectl [flags] put [-create] [-rev R] KEY [FILE]
//	                                             write the JSON value in FILE (default or "-": stdin)
//	convergectl [flags] apply KEY [FILE]         merge a JSON merge patch (RFC 7386) into the value
//	convergectl [flags] delete [-rev R] KEY      delete the key
//	convergectl [flags] watch [-after R] [PREFIX] print changes as JSON lines until interrupted
//
// Flags, before the command:
//
//	-server URL    the store's URL, with the path it is mounted at, such as
//	               http://127.0.0.1:7007/store (examples/jobs' default); else
//	               $CONVERGE_SERVER. There is no default: with neither,
//	               convergectl refuses to run (exit 2) rather than guess.
//	-token T       bearer token; -token-file FILE reads it from a file; with
//	               neither, $CONVERGE_TOKEN is read. The token is never printed.
//	-cacert FILE   PEM certificates to verify an https server with (default: the system's)
//	-cert FILE, -key FILE   a client certificate and its key, for servers that require one
//	-timeout D     bound on each request (default 30s; 0: no bound; watch is
//	               bounded only by an interrupt)
//	-max-value-size N   the largest value put and apply read, in bytes
//	               (default store.DefaultMaxValueSize, the server's default)
//
// Objects are printed as {"key","revision","createRevision","value"}; list
// prints {"revision":R,"objects":[...]}, where R is the store revision the
// listing reflects (a watch from R misses nothing after it), and with -keys
// one "KEY REVISION" line per object, KEY quoted as by strconv.Quote when it
// holds a space, a quote, a backslash or a character that is not printable
// (a newline, a tab), so that every object is one line, its revision the
// last field, and a line that starts with a quote holds a quoted key. watch
// prints one line per change,
// {"type":"created"|"updated"|"deleted","key",...,"value"} (a deletion
// carries the last value), from -after R (default: the current revision,
// so only changes to come), and exits 0 on SIGINT or SIGTERM.
//
// put creates the key if it does not exist, else replaces its value with a
// compare-and-swap against the revision it has just read, retried if
// another writer got there first. With -create it only creates; with -rev R
// (R at least 1) it only updates, and only if the key is still at revision
// R. apply reads the value, merges the patch, and writes it back against the
// revision read, retried likewise. delete removes the key at its latest
// revision, or with -rev R only if it is still at R. Values must be valid
// JSON of at most -max-value-size bytes: a larger input is refused after
// reading one byte past the limit, never read whole.
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
