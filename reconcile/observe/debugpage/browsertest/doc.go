// Package browsertest proves the debug page (reconcile/observe/debugpage) in a real
// browser: its test runs a controller with failing, backing-off, blocked
// and converged keys behind a Manager's HTTP server, and drives headless
// Chromium (Debian's chromium package) through chromedp to check what a
// person sees. Without Chromium the test is skipped, saying so; it never
// installs anything.
//
// A hostile stored key (995 bytes of U+202E, ESC and CR) with a 1.6 MB
// error is shown beside a page without it: the test compares the two
// layouts and screenshots, and reads the text the browser renders.
//
// It also attacks served endpoints as a web page would: hostile pages from
// another loopback origin, from a file:// URL and through DNS rebinding
// (attackFromHostilePages, reusable by any endpoint's test) try every way
// a page can make the browser write, and the store served by
// store/httpstore must refuse them all and change nothing.
//
// It is a module of its own so that the core module does not depend on
// chromedp. Run it with:
//
//	go test ./reconcile/observe/debugpage/browsertest
//
// CHROMIUM names the browser's binary if it is not /usr/bin/chromium or on
// PATH as chromium; CONVERGE_SCREENSHOT=path also writes the screenshot of
// the page there (the README's), and CONVERGE_SHARD_SCREENSHOT=path the
// screenshot of a sharded controller's page with ownerless buckets, and
// CONVERGE_HOSTILE_SCREENSHOT=path the hostile key's page (and, beside
// it, path-before.png the page without it).
package browsertest
