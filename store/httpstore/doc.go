// Package httpstore serves a store.Store over HTTP and is a store.Store
// over HTTP: NewHandler serves any store (memory, bbolt, etcd) with the
// standard library's net/http, and New returns a Client that is a
// store.Store of the served one, so that controllers, leases and helpers in
// other processes (a CLI, an admin script, a second daemon) work over it
// unchanged. It is the gateway to desired state held by a process that owns
// its store, such as a daemon over a bbolt file.
//
// # Guarantees
//
// Served over HTTP, a store keeps the store.Store contract, as
// store/storetest checks: revisions, compare-and-swap, guards, List's
// revision, watches in order exactly once, progress reports. Every store
// error comes back to the client as itself (errors.Is(err,
// store.ErrConflict) holds on the client whenever it held on the server).
// A call whose answer is lost (connection dropped, server gone) fails with
// an error matching store.ErrUnavailable; for a write, the write may or may
// not have happened, as with any store.
//
// Served over the API-server layer (an *apistore.Store), the store keeps
// the layer's contract for every client, as store/apistore/apistoretest
// checks over HTTP: finalizers and the deletion mark, the generation and
// the status owned by the layer, propagations, the identity. The Client
// offers the layer's writes (see "The API-server layer" below).
//
// A refused request changes nothing: the Host, the origin and the content
// type (see below), authentication, authorization, the query, the body
// size and the value are all checked before the store is called, and the
// store checks keys and guards before it writes. No value is changed
// silently: the handler decodes a written value with the codec and encodes
// it again, and refuses the write (400, code "invalid", store.ErrInvalid
// on the client) unless the body and that encoding are the same JSON
// value, so that what Get returns is what was sent. The same JSON value
// means no duplicate member name, no escaped lone surrogate, numbers equal
// as exact decimals (1e2 is 100; 9007199254740993, which a float64 reads
// as 9007199254740992, is refused for a map[string]any), equal strings,
// arrays element by element and objects member by member in any order. A
// member of the body the encoding lacks (an unknown field, a name matched
// without regard to case) is refused unless its value is null, false, 0,
// "", [] or {}; a member the body lacks may be added by the encoding only
// as such a zero (or an object of zeros); a member null in the body may be
// stored as a zero. So "90s" for a field that the type writes back as
// "1m30s" is refused: send it as the type writes it. Bad input
// gets a 4xx answer with a JSON body naming the problem, never a panic.
//
// Watches: the stream carries a heartbeat every WithHeartbeat (default
// DefaultHeartbeat). A client stream silent for the watch timeout
// (WithWatchTimeout, default twice the heartbeat) is judged dead and
// reopened after the last revision delivered; if no stream opens within
// another watch timeout the watch ends with store.ErrUnavailable. So a
// silent or unreachable server ends a watch within two watch timeouts (four
// heartbeats by default), and a server restart, within that time, is
// invisible to the consumer: no event lost, none repeated, or
// store.ErrCompacted when the server's history no longer reaches back.
//
// Shutdown: when the http.Server serving a watch begins Shutdown (any
// server: NewServer's, httptest's, your own), every watch stream it serves
// ends at once with an end frame saying unavailable, so that Shutdown is
// not held by streams that never end by themselves, and a watch asked of
// it afterwards is refused (503, unavailable). The client's watch then
// resumes like after any broken stream: on the next server to answer at
// its URL, or with store.ErrUnavailable if none does in time. The handler
// learns the server from the request (http.ServerContextKey) and
// registers with it (RegisterOnShutdown) when it first serves a watch on
// it: a stream that is a server's first and begins while its Shutdown
// does is not told, and Shutdown waits for it.
//
// # Keys on the wire
//
// Keys, prefixes and guard keys travel only in the query string, never in
// the URL path, percent-encoded (url.Values): the server takes the decoded
// bytes as the key, exactly. "../x", "a%2Fb" (the five bytes, sent as
// a%252Fb) and "a/b" are three ordinary keys, served as what they are; a
// key the store refuses (empty, over store.MaxKeyLen bytes, invalid UTF-8,
// a NUL byte, whether sent raw or as %00) is refused with 400 and code
// "invalid" (store.ErrInvalid). A malformed escape, an unknown or repeated
// parameter is refused the same way, so no request is read two ways. The
// path names the operation and must match a route exactly.
//
// # Protocol (version 1)
//
// Reads are GET, writes and progress requests POST with Content-Type:
// application/json (with a body or without); answers are JSON.
//
//	GET  /v1/get?key=K                          → {"key","value","revision","createRevision"}
//	GET  /v1/list?prefix=P                      → {"objects":[...],"revision":R}
//	GET  /v1/revision                           → {"revision":R}
//	GET  /v1/identity                           → {"identity":"..."}
//	POST /v1/create?key=K[&guard=G...]          body: value → 201 object
//	POST /v1/update?key=K&revision=R[&guard=G]  body: value → 200 object[,"deleted":true]
//	POST /v1/status?key=K&revision=R[&guard=G]  body: value → 200 object
//	POST /v1/apply?key=K[&guard=G...]           body: document → 200 object
//	POST /v1/delete?key=K&revision=R[&guard=G][&propagation=P] → {"revision":R[,"marked":true]}
//	POST /v1/check?key=K&revision=R[&guard=G]   → {"revision":R} (store.Checker; writes nothing)
//	POST /v1/batch  body: {"writes":[{"key","value","revision","delete","guards":[G...]}...]}
//	                → {"results":[{"object":...} or {"error":...}...]} (store.BatchWriter)
//	GET  /v1/watch?prefix=P&after=R             → newline-delimited JSON frames
//	POST /v1/progress?watch=ID&seq=N            → {"revision":R0}
//
// A guard is "mod:REVISION:KEY" (the key's last write is REVISION, 0 for
// absent) or "create:REVISION:KEY" (its creation). A value is the codec's
// encoding (store.JSON by default). An error is
// {"error":{"code","message"[,"also":[...]][,"fields":[...]]}} with code
// one of invalid, not_found, exists, conflict, guard_failed, compacted,
// lagging, unavailable, unauthorized, forbidden, too_many_watches, internal;
// clients decide by the code, not the status. "also" names further
// conditions the error matches, which a client that does not know them
// may ignore: "deleting" (apistore.ErrDeleting: a create of a key marked
// for deletion, code exists; a finalizer added to a marked object, code
// invalid), "rejected" (apistore.ErrRejected, code invalid: a kind's
// admission refused the object; the message names the fields) and
// "unsupported" (errors.ErrUnsupported, code invalid, status 404: the
// served store does not do what the route asks). "fields" lists, for code
// invalid, the fields a rule refused ({"field","reason"}, at most 20),
// which the client returns as apistore.FieldErrors. A foreign Host
// or a POST from another origin is "forbidden" (403), a POST without the
// JSON content type "invalid" (415).
//
// # The API-server layer
//
// Served over an *apistore.Store (store/apistore), the handler applies the
// layer for every client, Go programs, convergectl and curl alike: the
// generation, the deletion mark and the status are the layer's whatever a
// write says. The routes the layer adds:
//
//   - /v1/status writes the status of the body alone, over the stored spec
//     and metadata (apistore.StatusWriter); a served store that is no
//     StatusWriter refuses it as unsupported.
//   - /v1/apply writes what the body states over the stored object, or
//     creates it (apistore.Applier): the layer's rule keeps the status and
//     the finalizers and owners the body does not name, never completes a
//     deletion, and retries a conflict against the latest revision on the
//     server. A served store that is no Applier refuses it as unsupported.
//   - /v1/update of a Replacer (the layer) answers "deleted": true when the
//     write removed the last finalizer of a marked object and so deleted
//     it; the object answered is the value as the write left it, at the
//     revision of the delete.
//   - /v1/delete takes a propagation, background, foreground or orphan
//     (apistore.Propagation); absent or empty gives none, and the
//     layer keeps the object's own garbage-collector finalizer, which
//     decides (background if it carries neither). It answers
//     "marked": true when the object was only marked for deletion (its
//     finalizers have yet to run). A served store that is no
//     PropagatingDeleter deletes with background (or none) alone and refuses the
//     others as unsupported; an unknown propagation is invalid (400)
//     whatever the store.
//   - /v1/identity answers the store's identity (store.Identifier); a
//     store without one refuses it as unsupported.
//   - /v1/kinds answers the kinds document given by WithKinds (the rules
//     of store/apistore/schema, with printer columns); a handler without
//     one refuses it as unsupported.
//
// # Several kinds, one client
//
// A store server keeps every kind as JSON. NewShared makes one client of
// it and ViewOf a typed view per Go type: the views share its connections
// and credentials, and their watches one stream from the server (a watch
// that starts further behind than the stream keeps, 10,000 events, gets
// a stream of its own). Each view keeps every guarantee of a store
// (TestATypedViewOfASharedClientPassesConformance: store/storetest), and
// controllers of several kinds run on one client and one watch
// (TestControllersOfTwoKindsRunOnOneSharedClientAndOneWatch,
// TestViewsOfSeveralKindsShareOneWatch). A progress request of a view is
// answered to it alone, once the stream's answer covers the store's
// revision at the request.
//
// The exactness check above judges what the client sent against what the
// codec keeps of it, not against what the layer then stores: a write whose
// generation or deletion mark differs from the stored ones is accepted,
// and the layer sets its own. So a served layer answers every write with
// the object as stored (the layer's generation, the status it kept),
// encoded again; a store that stores values as given is answered with the
// checked encoding of the body, which is what it keeps.
//
// The Client offers the same writes (UpdateStatus, Apply, Replace,
// DeleteWith) and Identity, so that a controller over a Client of a served
// layer gets them through reconcile.Request.Store. Against a served store
// without them they fail with an error matching errors.ErrUnsupported and
// store.ErrInvalid, and nothing is written; Replace works on every store
// (it says deleted only over the layer), as does DeleteWith with
// apistore.Background or "".
//
// A watch stream's frames are {"type":"start","watch":ID,"heartbeatMillis":N},
// then {"type":"created"|"updated"|"deleted","object":{...}} in revision
// order, {"type":"progress","revision":R,"answers":N} (every change up to R
// has been sent; N, if set, is the progress request it answers),
// {"type":"ping"} every heartbeat, and, if the store's watch ends,
// {"type":"end","error":{...}}. The server asks its store's watch for
// progress every heartbeat, so progress frames also mark a quiet stream's
// position, which the client resumes from. Frames are written in batches:
// an event waits at most 1 ms for the events that follow it, so that a
// busy stream costs one write per millisecond rather than one per event.
//
// A client's RequestProgress posts to /v1/progress with the stream's id
// and a request number; the server reads its store's revision R0, answers
// it, and marks the stream's next progress frame at or above R0 with the
// number. If the request reaches a server that does not hold the stream
// (a load balancer spreading requests), the client takes the stream's next
// progress frame at or above R0, at the latest a heartbeat later. Either
// way the store contract holds: R >= the store's revision at the request,
// after every change up to R.
//
// The handler serves /v1/... paths; mount it elsewhere with
// http.StripPrefix and give clients the base URL with that path. It works
// over HTTP/1.1 and HTTP/2, with or without TLS, and over a Unix socket:
// serve a listener of net.Listen("unix", path) (with http.Server.Serve,
// or as a manager's ServerOptions.Listener), and give the client
// WithHTTPClient with a transport whose DialContext dials the socket and
// a base URL naming localhost (or a name under .localhost), which the
// Host check accepts; another name needs WithAllowedHosts. Package
// httpstoretest serves a store on an httptest server for tests.
//
// # What is protected, and what is not
//
//   - Web pages: a page open in a browser on any machine that can reach the
//     server (this one included, whatever the network) cannot change the
//     store, nor read it through DNS rebinding. Every request is checked
//     before its credentials: a Host header naming a host the handler does
//     not answer to (IP literals, "localhost" and names under ".localhost"
//     always; others only with WithAllowedHosts) is refused with 403 and
//     code "forbidden"; so is a POST that the browser marks as coming from
//     another origin (Sec-Fetch-Site or Origin; a page opened from a file is
//     another origin) unless WithTrustedOrigins lists it; and a POST whose
//     Content-Type is not application/json is refused with 415 and code
//     "invalid", which is what a cross-origin page can send without a CORS
//     preflight, and the handler answers no preflight. A page of another
//     origin can still send GET requests (it cannot read their answers: no
//     CORS header is ever sent), which cost the server a request or, for a
//     watch, one of its WithMaxWatches slots until the page closes it. Not
//     covered: pages of an origin listed in WithTrustedOrigins, which may
//     write; and, with WithAllowedHosts("*"), a page that rebinds its name
//     to the server, which is then its own origin and may read and write
//     unless tokens stop it.
//   - Authentication: bearer tokens (WithReadWriteToken, WithReadOnlyToken),
//     compared in constant time (SHA-256 of each, crypto/subtle), as the
//     manager's server compares its own. A token HTTP could not carry
//     exactly (empty, white space at an end, a control character) makes
//     NewHandler, or New for WithToken, fail with ErrInvalid. A
//     read-only token reads and watches; its writes get 403. Without any
//     token configured the handler serves every program that reaches it:
//     any process on this machine, and any host that can route to its
//     address, may read and write. Bind it to loopback, or require TLS
//     client certificates, or configure tokens; a daemon that acts on what
//     is written (runs commands) should not serve without tokens.
//   - There is no per-key authorization: a token reaches every key of the
//     store. Serve separate stores to separate audiences.
//   - Tokens live in memory, in the server's configuration and the
//     client's; they are not rotated, expired or logged by this package.
//     Without TLS they cross the network in clear.
//   - TLS is the caller's configuration: http.Server.TLSConfig (with
//     tls.RequireAndVerifyClientCert for client certificates) on the
//     server, WithTLSConfig on the client.
//   - Limits: request bodies (WithMaxBodyBytes), keys (store.MaxKeyLen),
//     concurrent watches (WithMaxWatches, 429 beyond), headers and timeouts
//     (NewServer, ApplyServerDefaults). A watch stream whose client stops
//     reading is closed after two heartbeats without progress.
//   - Not protected: the rate of requests (put a rate limiter in front),
//     the size of a List answer, denial of service by many connections.
package httpstore
