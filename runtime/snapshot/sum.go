package snapshot

import (
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"io"
	"sync"
)

// SumAlgorithm names the content fingerprint in Entry.Sum: CRC-32C
// (Castagnoli) followed by CRC-32 (IEEE), 16 hex digits. Both run in
// hardware (SSE4.2, PCLMULQDQ, ARMv8 CRC) at over 10 GB/s, where SHA-256
// runs at about 1 GB/s and would make hashing, not the copy, the cost of a
// snapshot. Two CRCs with different polynomials miss an accidental change
// with probability about 2⁻⁶³ and never miss a burst of up to 32 bits; they
// are no defence against a collision forged on purpose, which is not what a
// change list guards against (a child hiding its own work from its parent).
const SumAlgorithm = "crc32c+crc32"

// castagnoli is made on first use: its table costs a quarter of a
// millisecond at every start of pixir, which needs it only to snapshot.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// sum is the running fingerprint of one file.
// A copy worker's sum also carries its git blob hasher when Take stages a
// child's repository (gitstage.go).
type sum struct {
	c, i uint32
	blob *blobHasher
}

func (s *sum) reset() { *s = sum{blob: s.blob} }

func (s *sum) write(p []byte) {
	s.c = crc32.Update(s.c, castagnoli(), p)
	s.i = crc32.Update(s.i, crc32.IEEETable, p)
	if s.blob != nil {
		s.blob.write(p)
	}
}

func (s *sum) String() string {
	var b [8]byte
	binary.BigEndian.PutUint32(b[:4], s.c)
	binary.BigEndian.PutUint32(b[4:], s.i)
	return hex.EncodeToString(b[:])
}

// Fingerprint is the fingerprint of data, as Entry.Sum has it.
func Fingerprint(data []byte) string {
	var h sum
	h.write(data)
	return h.String()
}

// FingerprintReader is the fingerprint of everything r gives, its length,
// and whether it looks binary (IsBinary of its first bytes).
func FingerprintReader(r io.Reader) (string, int64, bool, error) {
	var h sum
	buf := make([]byte, bufSize)
	var n int64
	binary, first := false, true
	for {
		k, err := r.Read(buf)
		if k > 0 {
			if first {
				binary, first = IsBinary(buf[:k]), false
			}
			h.write(buf[:k])
			n += int64(k)
		}
		if err == io.EOF {
			return h.String(), n, binary, nil
		}
		if err != nil {
			return "", n, binary, err
		}
	}
}
