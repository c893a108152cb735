package demo

import (
	"errors"
	"testing"
)

// Only a loopback address or localhost is accepted without the insecure
// flag; every address with it.
func TestCheckLoopbackRefusesAnAddressOthersReachUnlessTold(t *testing.T) {
	for addr, ok := range map[string]bool{
		"127.0.0.1:0": true, "127.0.0.2:80": true, "[::1]:8080": true, "localhost:7018": true,
		":7018": false, "0.0.0.0:7018": false, "[::]:80": false, "10.0.0.5:80": false, "example.com:80": false, "": false, "127.0.0.1": false,
	} {
		err := CheckLoopback(addr, "-addr", "-insecure-no-token", false)
		if ok != (err == nil) || err != nil && !errors.Is(err, ErrNotLoopback) {
			t.Errorf("CheckLoopback(%q) = %v, want accepted %v", addr, err, ok)
		}
		if err := CheckLoopback(addr, "-addr", "-insecure-no-token", true); err != nil {
			t.Errorf("CheckLoopback(%q, insecure) = %v", addr, err)
		}
	}
}
