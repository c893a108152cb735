package demo

import (
	"errors"
	"fmt"
	"net"
)

// ErrNotLoopback marks a request to serve pages that have no token (a
// debug page, metrics) on an address that is not loopback, where anyone
// who reaches it reads them.
var ErrNotLoopback = errors.New("demo: serving without a token beyond loopback")

// CheckLoopback returns nil if addr (host:port) names a loopback IP
// address or localhost, or if insecure says the caller accepts serving
// it to whoever reaches it; else an error matching ErrNotLoopback that
// names flag, the command line's address option, and insecureFlag, the
// one that accepts it. An empty host (":8080") listens on every address
// and is refused.
func CheckLoopback(addr, flag, insecureFlag string, insecure bool) error {
	if insecure {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err == nil {
		if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
			return nil
		}
	}
	return fmt.Errorf("%w: %s %q: its debug page has no token; use a loopback address (127.0.0.1:PORT), or %s to serve it there",
		ErrNotLoopback, flag, addr, insecureFlag)
}
