package cache

// item is the value of the tests' objects.
type item struct {
	Want  int
	Owner string
}
