package redis

// channelHash hashes a channel name for placing it on a Redis and a shard.
// FNV-1a alone leaves names that differ in their last byte close in the
// high bits; the finalizer of MurmurHash3 spreads every input bit over
// the whole result.
func channelHash(s string) uint64 {
	h := fnv64a(s)
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// fnv64a hashes a channel name. Every Gyre node must map a channel to the
// same Redis, so the hash is fixed (FNV-1a) rather than seeded per process.
func fnv64a(s string) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= prime
	}
	return h
}

// jumpHash maps key to one of n buckets (Lamping and Veach, "A Fast,
// Minimal Memory, Consistent Hash Algorithm"): adding a bucket moves only
// 1/n of the keys, so growing a sharded setup keeps most channels where
// their history is.
func jumpHash(key uint64, n int) int {
	var b, j int64 = -1, 0
	for j < int64(n) {
		b = j
		key = key*2862933555777941757 + 1
		j = int64(float64(b+1) * (float64(int64(1)<<31) / float64((key>>33)+1)))
	}
	return int(b)
}
