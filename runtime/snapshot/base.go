package snapshot

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// A snapshot's base is what each file was when the snapshot was taken (or
// when an overlay or a merge last set it): what a three-way merge of the
// child's work needs, long after the workspace has moved on. The manifest
// holds every entry's fingerprint, mode and link target; the content of
// text files is kept in pack files beside it, written by the copy workers
// as they copy (one sequential file each, so it costs a write of the text
// bytes and no file of its own). Files that are not text (a NUL byte in
// their first 8,000 bytes, git's rule) and text files larger than
// MaxBaseSize keep no content: both sides changing such a file is a
// conflict whatever its content, as it is for git.

// MaxBaseSize is the largest text file whose content a snapshot keeps.
const MaxBaseSize = 8 << 20

// binaryProbe is how much of a file decides whether it is text: git looks
// for a NUL byte in the first 8,000 bytes.
const binaryProbe = 8000

// IsBinary reports whether data looks like a binary file by git's rule: a
// NUL byte in its first 8,000 bytes.
func IsBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binaryProbe)], 0) >= 0
}

// manifestFile is the manifest's name in the base folder.
const manifestFile = "manifest.json"

// packName is the file of base pack n (from 1).
func packName(n int) string { return "base-" + strconv.Itoa(n) }

// pack is one pack file being written: content is appended, and an entry
// records (pack, offset); its length is the entry's Size.
type pack struct {
	dir string
	n   int

	mu  sync.Mutex // a worker's own pack needs none; overlays and merges share the last one
	f   *os.File
	w   *bufio.Writer
	off int64
}

func (p *pack) open() error {
	if p.f != nil {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(p.dir, packName(p.n)), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	p.f, p.w, p.off = f, bufio.NewWriterSize(f, 1<<20), st.Size()
	return nil
}

// Write appends to the pack; the caller noted p.off before.
func (p *pack) Write(b []byte) (int, error) {
	if err := p.open(); err != nil {
		return 0, err
	}
	n, err := p.w.Write(b)
	p.off += int64(n)
	return n, err
}

// close flushes and closes the pack (a pack never opened is nothing).
func (p *pack) close() error {
	if p.f == nil {
		return nil
	}
	err := p.w.Flush()
	if cerr := p.f.Close(); err == nil {
		err = cerr
	}
	p.f, p.w = nil, nil
	return err
}

// keeper is what keeps one file's base content while it is copied: it
// decides on the first bytes (text or not), then appends every byte to
// its pack. A nil keeper keeps nothing.
type keeper struct {
	p       *pack
	start   int64
	decided bool
	keeping bool
}

// want says, before the copy, whether a file of this size may be kept.
func (k *keeper) want(size int64) bool { return k != nil && size <= MaxBaseSize }

// write takes the next bytes of the file.
func (k *keeper) write(b []byte) error {
	if k == nil || (k.decided && !k.keeping) {
		return nil
	}
	if !k.decided {
		k.decided, k.keeping, k.start = true, !IsBinary(b), k.p.off
		if !k.keeping {
			return nil
		}
	}
	_, err := k.p.Write(b)
	return err
}

// kept says where the file's content went: its pack and offset, or 0 for
// none. An empty file is kept (its content is nothing).
func (k *keeper) kept() (int, int64) {
	switch {
	case k == nil:
		return 0, 0
	case !k.decided: // empty
		return k.p.n, k.p.off
	case k.keeping:
		return k.p.n, k.start
	}
	return 0, 0
}

// Base is a file as the snapshot's base has it.
type Base struct {
	Entry
	// Content is a text file's content, or nil when it was not kept (not
	// text, or larger than MaxBaseSize): see Kept.
	Content []byte
	// Kept says the content was kept.
	Kept bool
}

// Lookup finds the base entry of a workspace-relative, slash-separated
// path.
func (m *Manifest) Lookup(path string) (*Entry, bool) {
	i, ok := m.index()[path]
	if !ok {
		return nil, false
	}
	return &m.Entries[i], true
}

// index maps paths to entries, made on first use (entries are sorted, but
// overlays and merges append).
func (m *Manifest) index() map[string]int {
	m.indexMu.Lock()
	defer m.indexMu.Unlock()
	if m.byPath == nil || len(m.byPath) != len(m.Entries) {
		m.byPath = make(map[string]int, len(m.Entries))
		for i, e := range m.Entries {
			m.byPath[e.Path] = i
		}
	}
	return m.byPath
}

// Base reads what path was at the base: its entry and, for a text file
// whose content was kept, the content. A path the base does not have
// is (nil, nil). Reading many, a BaseReader keeps the packs open.
func (m *Manifest) Base(path string) (*Base, error) {
	r := m.BaseReader()
	defer r.Close()
	return r.Base(path)
}

// BaseReader reads a manifest's base, keeping each pack it opens open
// until Close. Its Base may be called from several goroutines.
type BaseReader struct {
	m     *Manifest
	mu    sync.Mutex // guards packs
	packs map[int]*os.File
}

// BaseReader starts reading the base.
func (m *Manifest) BaseReader() *BaseReader { return &BaseReader{m: m, packs: map[int]*os.File{}} }

// Close closes the packs.
func (r *BaseReader) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.packs {
		f.Close()
	}
	clear(r.packs)
}

// Base is Manifest.Base.
func (r *BaseReader) Base(path string) (*Base, error) {
	m := r.m
	e, ok := m.Lookup(path)
	if !ok {
		return nil, nil
	}
	b := &Base{Entry: *e}
	if !e.Mode.IsRegular() || e.BasePack == 0 {
		return b, nil
	}
	if e.Size == 0 {
		b.Content, b.Kept = []byte{}, true
		return b, nil
	}
	if m.BaseDir == "" {
		return b, nil
	}
	f, err := r.pack(e.BasePack)
	if err != nil {
		return nil, fmt.Errorf("reading the base of %s: %w", path, err)
	}
	b.Content = make([]byte, e.Size)
	if _, err := f.ReadAt(b.Content, e.BaseOff); err != nil {
		return nil, fmt.Errorf("reading the base of %s: %w", path, err)
	}
	var h sum
	h.write(b.Content)
	if h.String() != e.Sum {
		return nil, fmt.Errorf("the base of %s is damaged (its fingerprint does not match); it cannot be merged three-way", path)
	}
	b.Kept = true
	return b, nil
}

// pack is base pack n, opened on first use (ReadAt on it is safe from
// several goroutines).
func (r *BaseReader) pack(n int) (*os.File, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f := r.packs[n]; f != nil {
		return f, nil
	}
	f, err := os.Open(filepath.Join(r.m.BaseDir, packName(n)))
	if err != nil {
		return nil, err
	}
	r.packs[n] = f
	return f, nil
}

// SetBase makes data (with mode) the base of path, as a regular file:
// after a merge that conflicted, the workspace's version is the base the
// child resolves against. It does not save the manifest (Save does).
func (m *Manifest) SetBase(path string, data []byte, mode fs.FileMode) error {
	return m.SetBaseEntry(path, Fingerprint(data), int64(len(data)), mode, data)
}

// SetBaseEntry makes the base of path a regular file of this fingerprint,
// size and mode; data, its content when at hand, is kept when it is text
// and not too large. It does not save the manifest (Save does).
func (m *Manifest) SetBaseEntry(path, sum string, size int64, mode fs.FileMode, data []byte) error {
	e := Entry{Path: path, Size: size, Mode: mode & modeBits, Sum: sum}
	if m.BaseDir != "" && data != nil && int64(len(data)) == size && size <= MaxBaseSize && !IsBinary(data) {
		p := m.extraPack()
		p.mu.Lock()
		e.BasePack, e.BaseOff = p.n, p.off
		_, err := p.Write(data)
		p.mu.Unlock()
		if err != nil {
			return fmt.Errorf("keeping the base of %s: %w", path, err)
		}
	}
	m.put(e)
	return nil
}

// SetBaseLink makes the base of path a symbolic link to target.
func (m *Manifest) SetBaseLink(path, target string) {
	m.put(Entry{Path: path, Size: int64(len(target)), Mode: fs.ModeSymlink | 0o777, Link: target})
}

// DropBase takes path out of the base: the snapshot did not have it.
func (m *Manifest) DropBase(path string) {
	m.indexMu.Lock()
	defer m.indexMu.Unlock()
	m.Entries = slices.DeleteFunc(m.Entries, func(e Entry) bool { return e.Path == path })
	m.byPath = nil
}

// extraPack is the pack that overlays and SetBase append to: one past
// the copy workers'.
func (m *Manifest) extraPack() *pack {
	m.indexMu.Lock()
	defer m.indexMu.Unlock()
	if m.extra == nil {
		m.Packs++
		m.extra = &pack{dir: m.BaseDir, n: m.Packs}
	}
	return m.extra
}

// put adds or replaces an entry.
func (m *Manifest) put(e Entry) {
	if i, ok := m.index()[e.Path]; ok {
		m.Entries[i] = e
		return
	}
	m.indexMu.Lock()
	m.Entries = append(m.Entries, e)
	m.byPath[e.Path] = len(m.Entries) - 1
	m.indexMu.Unlock()
}

// MarkConflict records that path in the child's workspace now holds the
// conflict markers of a merge (sum is their fingerprint), so a merge of
// the file unchanged is refused as unresolved.
func (m *Manifest) MarkConflict(path, sum string) {
	if i, ok := m.index()[path]; ok {
		m.Entries[i].Conflict = sum
	}
}

// Save writes the manifest into its base folder (atomically: a new file
// renamed over the old one), so a later process can compute the child's
// changes and merge them.
func (m *Manifest) Save() error {
	if m.BaseDir == "" {
		return errors.New("snapshot: the manifest has no base folder to be saved in")
	}
	if p := m.extra; p != nil {
		p.mu.Lock()
		err := p.close() // what it names must be on disk first
		p.mu.Unlock()
		if err != nil {
			return fmt.Errorf("saving the snapshot base: %w", err)
		}
	}
	tmp, err := os.CreateTemp(m.BaseDir, manifestFile+".*")
	if err != nil {
		return fmt.Errorf("saving the snapshot manifest: %w", err)
	}
	w := bufio.NewWriterSize(tmp, 256<<10)
	err = json.NewEncoder(w).Encode(m)
	if err == nil {
		err = w.Flush()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(m.BaseDir, manifestFile))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("saving the snapshot manifest: %w", err)
	}
	return nil
}

// Load reads the manifest a snapshot saved in its base folder.
func Load(baseDir string) (*Manifest, error) {
	f, err := os.Open(filepath.Join(baseDir, manifestFile))
	if err != nil {
		return nil, fmt.Errorf("loading the snapshot manifest: %w", err)
	}
	defer f.Close()
	var m Manifest
	if err := json.NewDecoder(bufio.NewReaderSize(f, 256<<10)).Decode(&m); err != nil {
		return nil, fmt.Errorf("loading the snapshot manifest %s: %w", f.Name(), err)
	}
	m.BaseDir = baseDir
	return &m, nil
}

// relOK checks a change-list path and makes it OS-separated.
func relOK(p string) (string, error) {
	rel := filepath.FromSlash(p)
	if p == "" || filepath.IsAbs(rel) || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%q is not a path inside the workspace", p)
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i, name := range parts {
		if Excluded(name, i < len(parts)-1) {
			return "", fmt.Errorf("%q is excluded from snapshots", p)
		}
	}
	return rel, nil
}
