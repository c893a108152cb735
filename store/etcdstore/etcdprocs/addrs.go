package etcdprocs

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
)

// lowestPort is the lowest port FreeAddrs hands out: above the ports
// services commonly listen on.
const lowestPort = 10000

// FreeAddrs returns n distinct loopback addresses ("127.0.0.1:port") whose
// ports were free when it returned. An etcd member's peer URLs must be known
// before it starts, and a restarted member must get its old ports back, so
// the ports cannot be chosen by the kernel at bind time.
//
// The ports are taken at random from below the kernel's ephemeral range
// (ip_local_port_range on Linux, 32768 where unknown): a port the kernel
// hands out for port-0 listeners and outgoing connections (as every other
// test process does all the time) would be taken back between this check and
// the member's bind, or while a member is stopped to be restarted. What is
// not guaranteed: that another process choosing ports the same way does not
// pick the same one in between; with about twenty thousand candidates that
// is rare, not impossible.
func FreeAddrs(n int) ([]string, error) {
	high := ephemeralLow()
	if high <= lowestPort+n {
		high = 32768
	}
	addrs := make([]string, 0, n)
	var held []net.Listener
	defer func() {
		for _, l := range held {
			l.Close()
		}
	}()
	for tries := 0; len(addrs) < n; tries++ {
		if tries > 1000 {
			return nil, fmt.Errorf("etcdprocs: no free loopback port found in [%d, %d)", lowestPort, high)
		}
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(lowestPort+rand.IntN(high-lowestPort)))
		l, err := net.Listen("tcp", addr)
		if err != nil {
			continue // taken; pick another
		}
		held = append(held, l) // held until all are chosen, so none repeats
		addrs = append(addrs, addr)
	}
	return addrs, nil
}

// ephemeralLow returns the first port of the kernel's ephemeral range, or
// 0 when it cannot be read.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0
	}
	low, err := strconv.Atoi(fields[0])
	if err != nil {
		return 0
	}
	return low
}
