package cputime_test

import (
	"fmt"

	"github.com/converge-go/converge/internal/cputime"
)

// Measure the CPU a piece of work used.
func ExampleProcess() {
	before := cputime.Process()
	sum := 0
	for i := range 1000 {
		sum += i
	}
	used := cputime.Process() - before
	fmt.Println(sum, used >= 0)
	// Output: 499500 true
}
