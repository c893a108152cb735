package shard

// Bucket returns the bucket of key among n buckets (n > 0): the 64-bit
// FNV-1a hash of the key's bytes, passed through the SplitMix64 finaliser
// (so that keys differing in their last bytes spread over every bucket),
// modulo n. The function is part of the package's contract and never
// changes: a key stays in its bucket for as long as the bucket count does.
// Changing Options.Buckets on a running deployment moves almost every key,
// so do not: every replica must use the same count.
func Bucket(key string, n int) int {
	if n <= 0 {
		return 0
	}
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(key); i++ {
		h ^= uint64(key[i])
		h *= prime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return int(h % uint64(n))
}
