package report

import "hash/maphash"

// The JUnit builder's records and its set of ids: records are kept in
// chunks and become []Test only in finish; repeated ids are found as they
// arrive, in batches.

// jbRecord is one test while the report is read; records become []Test only
// at the end, so the peak memory per id is a 32-byte record, the id bytes and
// 16-32 bytes of the duplicate set, plus the final Test.
type jbRecord struct {
	id   string
	msg  int32
	file int32
	meta uint32 // line (low 28 bits), status (2 bits), a loaded file (bit 30), flaky (top bit)
	path uint32 // FNV-1a of the suite path, for the duplicate hint
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

const (
	jbChunk = 4096 // records per chunk
	jbBatch = 64   // records per dedup batch
)

func (b *junitBuilder) rec(i int32) *jbRecord { return &b.recs[i/jbChunk][i%jbChunk] }

// insert records a test. Whether its id is new is decided in batches
// (dedup): the answer is needed only at the end.
func (b *junitBuilder) insert(r jbRecord) {
	if len(b.recs) == 0 || len(b.recs[len(b.recs)-1]) == jbChunk {
		b.recs = append(b.recs, make([]jbRecord, 0, jbChunk))
	}
	last := &b.recs[len(b.recs)-1]
	*last = append(*last, r)
	b.pending = append(b.pending, int32(b.n))
	b.n++
	if len(b.pending) == cap(b.pending) {
		b.dedup()
	}
}

// dedup puts the pending records into the set of ids, counting each one
// already there as a duplicate. With a million ids the set is far larger
// than the CPU caches and every probe is a miss; touching the slots of a
// whole batch first lets those independent loads overlap, so a batch waits
// for memory about once rather than once per id.
func (b *junitBuilder) dedup() {
	if size := len(b.slots); 2*(b.unique+len(b.pending)) > size {
		for 2*(b.unique+len(b.pending)) > size {
			size *= 2 // a power of two: probes wrap with a mask
		}
		old := b.slots
		b.slots = make([]uint64, size)
		for _, v := range old {
			if v != 0 {
				b.place(v)
			}
		}
	}
	mask := uint32(len(b.slots) - 1)
	var hs [jbBatch]uint32
	var touch uint64
	for k, i := range b.pending {
		hs[k] = uint32(maphash.String(b.seed, b.rec(i).id))
		touch += b.slots[hs[k]&mask]
	}
	b.touch += touch // keeps the loads
	for k, i := range b.pending {
		if orig := b.lookup(b.rec(i).id, hs[k]); orig >= 0 {
			b.duplicate(orig, b.rec(i).path)
			continue
		}
		b.place(uint64(hs[k])<<32 | uint64(i+1))
		b.unique++
	}
	b.pending = b.pending[:0]
}

// lookup finds the record holding id (hash h) in the set, or -1.
func (b *junitBuilder) lookup(id string, h uint32) int32 {
	mask := uint32(len(b.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		v := b.slots[i]
		if v == 0 {
			return -1
		}
		if uint32(v>>32) == h && b.rec(int32(uint32(v)-1)).id == id {
			return int32(uint32(v) - 1)
		}
	}
}

func (b *junitBuilder) place(v uint64) {
	mask := uint32(len(b.slots) - 1)
	i := uint32(v>>32) & mask
	for b.slots[i] != 0 {
		i = (i + 1) & mask
	}
	b.slots[i] = v
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
