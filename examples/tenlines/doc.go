// Package tenlines holds the controller of the README's "Ten lines" section
// as a runnable example (see its tests), with a test that keeps the
// README's copy identical to the code that runs. The reconciler is the
// ReconcilerFunc at the top of Example in example_test.go, not in a
// reconciler.go: the README shows it inline, and the README's copy must be
// the code that runs.
package tenlines
