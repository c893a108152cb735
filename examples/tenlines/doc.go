// Package tenlines holds the controller of the README's "Ten lines" section
// as a runnable example (see its tests), with a test that keeps the
// README's copy identical to the code that runs.
package tenlines
