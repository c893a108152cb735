package bench

// AddGetDone is scenario S1: one goroutine adds a key, gets it back and marks
// it done, n times, cycling through keys (so consecutive keys are distinct).
// It returns how many Gets handed out a key other than the one just added,
// which is zero for a correct queue.
func AddGetDone(q Queue, keys []string, n int) (mismatches int) {
	for i := range n {
		key := keys[i%len(keys)]
		q.Add(key)
		got, ok := q.Get()
		if !ok {
			return mismatches + n - i
		}
		if got != key {
			mismatches++
		}
		q.Done(got)
	}
	return mismatches
}
