package report

import (
	"hash/maphash"
	"slices"
	"unsafe"
)

// The JUnit builder's records and its ids: records are kept in chunks and
// become []Test only in finish; repeated ids are found there, by sorting.

// jbRecord is one test while the report is read; records become []Test only
// at the end, so the peak memory per id is a 32-byte record, the id bytes and
// 16 bytes of sort keys, plus the final Test. A record holds no pointer (its
// id is a place in the arena): the collector never scans the records.
type jbRecord struct {
	blk, off, n uint32 // the id: arena block, offset, length
	hash        uint32 // of the id, for dedup
	msg         int32
	file        int32
	meta        uint32 // line (low 28 bits), status (2 bits), a loaded file (bit 30), flaky (top bit)
	path        uint32 // FNV-1a of the suite path, for the duplicate hint
}

const (
	jbLineBits  = 28
	jbLineMask  = 1<<jbLineBits - 1
	jbFileFlag  = 1 << 30
	jbFlakyFlag = 1 << 31
)

func (r *jbRecord) line() int { return int(r.meta & jbLineMask) }

func (r *jbRecord) status() uint8 { return uint8(r.meta >> jbLineBits & 3) }

func (r *jbRecord) flaky() bool { return r.meta&jbFlakyFlag != 0 }

// loadedFile: node:test's entry for a file that defined no test
// (nodetest.go), recorded in Inventory.Files rather than as a test.
func (r *jbRecord) loadedFile() bool { return r.meta&jbFileFlag != 0 }

const jbChunk = 4096 // records per chunk

func (b *junitBuilder) rec(i int32) *jbRecord { return &b.recs[i/jbChunk][i%jbChunk] }

// id is record r's id, in the arena.
func (b *junitBuilder) id(r *jbRecord) string {
	blk := b.blocks[r.blk]
	return unsafe.String(&blk[:cap(blk)][r.off], r.n)
}

// insert records a test and the hash of its id, taken while the id's bytes
// are still in cache. Whether the id is new is decided once, at the end
// (dedup).
func (b *junitBuilder) insert(r jbRecord) {
	if len(b.recs) == 0 || len(b.recs[len(b.recs)-1]) == jbChunk {
		b.recs = append(b.recs, make([]jbRecord, 0, jbChunk))
	}
	r.hash = uint32(maphash.String(b.seed, b.id(&r)))
	last := &b.recs[len(b.recs)-1]
	*last = append(*last, r)
	b.n++
}

// dedup counts every id that repeats an earlier one. It sorts the (hash,
// record index) keys and compares ids only where hashes are equal: a hash
// set probed per id costs a cache miss per id once a million ids outgrow
// the CPU caches, where a radix sort's passes read and write in order.
func (b *junitBuilder) dedup() {
	keys := make([]uint64, b.n)
	for i := range keys {
		keys[i] = uint64(b.rec(int32(i)).hash)<<32 | uint64(i)
	}
	keys = sortKeys(keys, make([]uint64, b.n))
	var firsts []int32 // the distinct ids among one run of equal hashes
	for lo := 0; lo < len(keys); {
		hi := lo + 1
		for hi < len(keys) && keys[hi]>>32 == keys[lo]>>32 {
			hi++
		}
		if hi-lo > 1 {
			// Equal hashes, in the order of the records: a repeated id, or
			// (rarely) distinct ids whose hashes collide.
			firsts = firsts[:0]
		next:
			for _, k := range keys[lo:hi] {
				i := int32(uint32(k))
				for _, f := range firsts {
					if b.id(b.rec(f)) == b.id(b.rec(i)) {
						b.duplicate(f, b.rec(i).path)
						continue next
					}
				}
				firsts = append(firsts, i)
			}
		}
		lo = hi
	}
}

// sortKeys sorts keys by their high 32 bits, keeping the order of equal
// ones (record order: the low 32 bits ascend as inserted), using tmp (as
// long as keys) as the other buffer. It returns whichever holds the result.
func sortKeys(keys, tmp []uint64) []uint64 {
	if len(keys) < 256 {
		slices.Sort(keys) // the low bits are distinct: the same order
		return keys
	}
	var counts [4][256]int
	for _, k := range keys {
		counts[0][byte(k>>32)]++
		counts[1][byte(k>>40)]++
		counts[2][byte(k>>48)]++
		counts[3][byte(k>>56)]++
	}
	for pass := range counts {
		c := &counts[pass]
		sum := 0
		for d := range c {
			c[d], sum = sum, sum+c[d]
		}
		shift := 32 + 8*pass
		for _, k := range keys {
			d := byte(k >> shift)
			tmp[c[d]] = k
			c[d]++
		}
		keys, tmp = tmp, keys
	}
	return keys
}

// duplicate counts a further occurrence of record idx and tracks whether
// suite-path ids would tell the occurrences apart.
func (b *junitBuilder) duplicate(idx int32, path uint32) {
	if b.dupExtra == nil {
		b.dupExtra = map[int32]int32{}
		b.dupPairs = map[[2]uint32]struct{}{}
	}
	b.dupExtra[idx]++
	if b.identity == IdentitySuitePath || !b.pathsSplit {
		return
	}
	key := [2]uint32{uint32(idx), path}
	if _, ok := b.dupPairs[key]; ok || b.rec(idx).path == path {
		b.pathsSplit = false
		return
	}
	b.dupPairs[key] = struct{}{}
}
