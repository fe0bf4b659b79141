package snapshot

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The trees of a child repository's index, written without a git process
// (what `git write-tree` does): the index git add -A just wrote is read,
// and a tree object is written for each folder whose tree the index's
// cache of trees (its TREE extension) does not name still: what did not
// change since the parent's last commit is neither hashed nor written, so
// the child's store gets only the trees that are new.

// errIndexNotRead says the index uses something writeIndexTrees does not
// read; git write-tree is then asked.
var errIndexNotRead = errors.New("an index this reader does not read")

// indexEntry is what a tree needs of an index entry.
type indexEntry struct {
	path string
	mode uint32
	oid  []byte
	// stat is the entry's stat data as the index keeps it: ctime (s, ns),
	// mtime (s, ns), dev, ino, mode, uid, gid, size, each 32 bits.
	stat [10]uint32
	// kept: git add -A keeps the entry whatever the work tree has
	// (assume-unchanged or skip-worktree).
	kept bool
}

// The stat fields of an index entry, by position.
const (
	statCtimeS = iota
	statCtimeN
	statMtimeS
	statMtimeN
	statDev
	statIno
	statMode
	statUID
	statGID
	statSize
)

// writeIndexTrees writes the trees of gitDir's index (versions 2 and 3,
// not split, not sparse, every entry merged and none only intended to be
// added) and returns the root tree's id.
func writeIndexTrees(gitDir, format string) (string, error) {
	hashLen := map[string]int{"sha1": 20, "sha256": 32}[format]
	if hashLen == 0 {
		return "", errIndexNotRead
	}
	b, err := os.ReadFile(filepath.Join(gitDir, "index"))
	if err != nil {
		return "", err
	}
	entries, cached, err := readIndex(b, hashLen)
	if err != nil {
		return "", err
	}
	have, err := openStores(gitDir, hashLen)
	if err != nil {
		return "", err
	}
	defer have.close()
	w := treeWriter{gitDir: gitDir, format: format, cached: cached, have: have}
	id, rest, err := w.tree(entries, "")
	if err == nil && len(rest) > 0 {
		err = fmt.Errorf("index entry %q out of order", rest[0].path)
	}
	return id, err
}

// readIndex reads the entries of an index file and its cache of trees:
// the tree id of each folder ("" for the root, "a/b/" for a folder) whose
// tree is still valid.
func readIndex(b []byte, hashLen int) ([]indexEntry, map[string]string, error) {
	if len(b) < 12+hashLen || string(b[:4]) != "DIRC" {
		return nil, nil, errors.New("the index is not an index file")
	}
	version := binary.BigEndian.Uint32(b[4:])
	if version != 2 && version != 3 {
		return nil, nil, errIndexNotRead
	}
	n := int(binary.BigEndian.Uint32(b[8:]))
	body := b[:len(b)-hashLen] // the checksum is git's to check
	off := 12
	entries := make([]indexEntry, 0, n)
	for range n {
		fixed := off + 40 + hashLen + 2
		if fixed > len(body) {
			return nil, nil, errors.New("the index ends inside an entry")
		}
		mode := binary.BigEndian.Uint32(body[off+24:])
		oid := body[off+40 : off+40+hashLen]
		flags := binary.BigEndian.Uint16(body[fixed-2:])
		// Assume unchanged: git add keeps what the index says.
		kept := flags&0x8000 != 0
		nameAt := fixed
		if flags&0x4000 != 0 { // extended flags (version 3)
			if nameAt+2 > len(body) {
				return nil, nil, errors.New("the index ends inside an entry")
			}
			extended := binary.BigEndian.Uint16(body[nameAt:])
			if extended&0x2000 != 0 { // intent to add
				return nil, nil, errIndexNotRead
			}
			// Skip-worktree: a sparse checkout's file, not in the work
			// tree, which git add -A keeps.
			kept = kept || extended&0x4000 != 0
			nameAt += 2
		}
		if flags&0x3000 != 0 { // a stage: an unmerged path
			return nil, nil, errIndexNotRead
		}
		end := bytes.IndexByte(body[nameAt:], 0)
		if end < 0 {
			return nil, nil, errors.New("the index ends inside an entry")
		}
		name := string(body[nameAt : nameAt+end])
		if mode&0o170000 == 0o040000 { // a sparse index's folder
			return nil, nil, errIndexNotRead
		}
		e := indexEntry{path: name, mode: mode, oid: oid, kept: kept}
		for i := range e.stat {
			e.stat[i] = binary.BigEndian.Uint32(body[off+4*i:])
		}
		entries = append(entries, e)
		// Entries are padded with 1 to 8 NULs to a multiple of 8 bytes.
		off += (nameAt - off + end + 8) &^ 7
	}
	cached := map[string]string{}
	for off+8 <= len(body) {
		sig := string(body[off : off+4])
		size := int(binary.BigEndian.Uint32(body[off+4:]))
		if off+8+size > len(body) {
			return nil, nil, errors.New("the index ends inside an extension")
		}
		switch {
		case sig[0] >= 'a' && sig[0] <= 'z':
			// Git's rule: an extension named in lower case changes what the
			// entries mean (link: a split index keeps entries elsewhere;
			// sdir: a sparse one has folders), and a reader that does not
			// know it must not go on.
			return nil, nil, errIndexNotRead
		case sig == "TREE":
			if rest, err := readCacheTree(body[off+8:off+8+size], "", true, hashLen, cached); err != nil || len(rest) > 0 {
				clear(cached) // not understood: every tree is written
			}
		}
		off += 8 + size
	}
	return entries, cached, nil
}

// readCacheTree reads one node of the TREE extension and those under it:
// its name (a path component, "" for the root), NUL, how many index
// entries it covers (-1: invalid) and how many subtrees it has, a
// newline, and when valid its tree id; then its subtrees.
func readCacheTree(b []byte, parent string, root bool, hashLen int, cached map[string]string) ([]byte, error) {
	nul := bytes.IndexByte(b, 0)
	if nul < 0 {
		return nil, errors.New("cache tree: no name")
	}
	path := parent + string(b[:nul]) + "/"
	if root {
		path = ""
	}
	b = b[nul+1:]
	nl := bytes.IndexByte(b, '\n')
	if nl < 0 {
		return nil, errors.New("cache tree: no counts")
	}
	count, subtrees, ok := strings.Cut(string(b[:nl]), " ")
	n, err1 := strconv.Atoi(count)
	subs, err2 := strconv.Atoi(subtrees)
	if !ok || err1 != nil || err2 != nil {
		return nil, errors.New("cache tree: bad counts")
	}
	b = b[nl+1:]
	if n >= 0 {
		if len(b) < hashLen {
			return nil, errors.New("cache tree: no id")
		}
		cached[path] = hex.EncodeToString(b[:hashLen])
		b = b[hashLen:]
	}
	for range subs {
		var err error
		if b, err = readCacheTree(b, path, false, hashLen, cached); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// treeWriter writes the trees of one index.
type treeWriter struct {
	gitDir, format string
	cached         map[string]string
	// have says whether an object is stored already (nil: write all).
	have *stores
}

// tree writes the tree of the entries under prefix (a folder's path and a
// slash, or "" for the root), which come first in entries (the index is
// sorted by path, which is also the order of a tree's entries), unless
// the cache names it, and returns its id and the entries after them.
func (w treeWriter) tree(entries []indexEntry, prefix string) (string, []indexEntry, error) {
	if id, ok := w.cached[prefix]; ok {
		for len(entries) > 0 && strings.HasPrefix(entries[0].path, prefix) {
			entries = entries[1:]
		}
		return id, entries, nil
	}
	var tree bytes.Buffer
	for len(entries) > 0 && strings.HasPrefix(entries[0].path, prefix) {
		e := entries[0]
		name := e.path[len(prefix):]
		if dir, _, ok := strings.Cut(name, "/"); ok {
			id, rest, err := w.tree(entries, prefix+dir+"/")
			if err != nil {
				return "", nil, err
			}
			raw, _ := hex.DecodeString(id)
			tree.WriteString("40000 " + dir + "\x00")
			tree.Write(raw)
			entries = rest
			continue
		}
		var mode string
		switch e.mode & 0o170000 {
		case 0o100000:
			mode = "100644"
			if e.mode&0o111 != 0 {
				mode = "100755"
			}
		case 0o120000:
			mode = "120000"
		case 0o160000:
			mode = "160000"
		default:
			return "", nil, fmt.Errorf("index entry %q has mode %o", e.path, e.mode)
		}
		tree.WriteString(mode + " " + name + "\x00")
		tree.Write(e.oid)
		entries = entries[1:]
	}
	id, err := objectID(w.format, "tree", tree.Bytes())
	if err == nil && (w.have == nil || !w.have.has(id)) {
		_, err = writeObject(w.gitDir, w.format, "tree", tree.Bytes())
	}
	return id, entries, err
}

// stores are the object stores a child repository reads: its own and
// its alternates (the parent's), loose objects and packs, so that a tree
// the parent has is not written again (git write-tree does not either).
type stores struct {
	dirs    []string // objects folders
	packs   []*packIndex
	hashLen int
}

// packIndex is a pack's .idx (version 2), read where a lookup needs it.
type packIndex struct {
	f      *os.File
	fanout [256]uint32
}

func openStores(gitDir string, hashLen int) (*stores, error) {
	s := &stores{dirs: []string{filepath.Join(gitDir, "objects")}, hashLen: hashLen}
	if b, err := os.ReadFile(filepath.Join(gitDir, "objects", "info", "alternates")); err == nil {
		for line := range strings.Lines(string(b)) {
			if d := strings.TrimSpace(line); d != "" && !strings.HasPrefix(d, "#") && filepath.IsAbs(d) {
				s.dirs = append(s.dirs, d)
			}
		}
	}
	for _, d := range s.dirs {
		idx, _ := filepath.Glob(filepath.Join(d, "pack", "pack-*.idx"))
		for _, name := range idx {
			f, err := os.Open(name)
			if err != nil {
				continue
			}
			p := &packIndex{f: f}
			head := make([]byte, 8+256*4)
			if _, err := f.ReadAt(head, 0); err != nil || string(head[:4]) != "\xfftOc" || binary.BigEndian.Uint32(head[4:]) != 2 {
				f.Close()
				continue // not read: its objects are written again, which is harmless
			}
			for i := range p.fanout {
				p.fanout[i] = binary.BigEndian.Uint32(head[8+4*i:])
			}
			s.packs = append(s.packs, p)
		}
	}
	return s, nil
}

func (s *stores) close() {
	for _, p := range s.packs {
		p.f.Close()
	}
}

// has says whether an object is stored (an error reading says no).
func (s *stores) has(id string) bool {
	for _, d := range s.dirs {
		if _, err := os.Lstat(filepath.Join(d, id[:2], id[2:])); err == nil {
			return true
		}
	}
	raw, err := hex.DecodeString(id)
	if err != nil || len(raw) != s.hashLen {
		return false
	}
	for _, p := range s.packs {
		if p.has(raw) {
			return true
		}
	}
	return false
}

// has looks the object up in the index's sorted ids, between the fanout
// bounds of its first byte.
func (p *packIndex) has(raw []byte) bool {
	lo, hi := uint32(0), p.fanout[raw[0]]
	if raw[0] > 0 {
		lo = p.fanout[raw[0]-1]
	}
	buf := make([]byte, len(raw))
	for lo < hi {
		mid := lo + (hi-lo)/2
		if _, err := p.f.ReadAt(buf, int64(8+256*4)+int64(mid)*int64(len(raw))); err != nil {
			return false
		}
		switch c := bytes.Compare(buf, raw); {
		case c == 0:
			return true
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return false
}
