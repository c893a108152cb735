// Package tenlines holds the controller of the README's "Ten lines" section
// and the operator of its "An operator in ten lines" section as runnable
// examples (see its tests), with tests that keep the README's copies
// identical to the code that runs. The reconciler is the
// ReconcilerFunc at the top of Example in example_test.go, not in a
// reconciler.go: the README shows it inline, and the README's copy must be
// the code that runs.
package tenlines
