package sandbox

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Programs resolves a command allowlist into the files Policy.Execute
// allows. Each name is looked up in the folders of pathList (PATH); an
// absolute path is taken as it is, and an absolute folder allows every file
// beneath it (a tool's helpers: /usr/lib/git-core). With each program come
// the files it needs to start: a dynamically linked ELF program's loader
// (PT_INTERP), a script's #! interpreter, and theirs. Names found nowhere
// are returned in missing.
//
// What the allowlist guarantees where Landlock holds it: no process a
// command starts can execve a file that is not listed, and nothing the
// command may write is executable, so it cannot run what it wrote or
// copied. What it does not: an allowed program does what it is made to
// do. An interpreter (python, node, sh) runs any code it is given, a build
// tool runs what it builds where that is allowed, a program that starts
// helpers (go runs its compiler, git its subcommands) needs them listed
// too, and the loader of a dynamically linked program, which must be
// allowed for the program to start, can itself be started to load an
// unlisted program ("ld.so /usr/bin/x"); Landlock does not govern mmap.
// The allowlist keeps an agent to its tools; the write confinement and
// the network denial are the boundaries.
func Programs(pathList string, names []string) (files, missing []string) {
	add := func(f string) {
		if !slices.Contains(files, f) {
			files = append(files, f)
		}
	}
	for _, name := range names {
		p := lookProgram(pathList, name)
		if p == "" {
			missing = append(missing, name)
			continue
		}
		add(p)
		for _, need := range startNeeds(p, 4) {
			add(need)
		}
	}
	return files, missing
}

// lookProgram finds name: an absolute path that exists, or the first
// executable regular file called name in the folders of pathList.
func lookProgram(pathList, name string) string {
	if filepath.IsAbs(name) {
		if _, err := os.Stat(name); err == nil {
			return filepath.Clean(name)
		}
		return ""
	}
	if strings.Contains(name, "/") {
		return ""
	}
	for _, dir := range filepath.SplitList(pathList) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue // a relative PATH entry would depend on the command's folder
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return p
		}
	}
	return ""
}

// startNeeds are the files the kernel must execute to start program p:
// its ELF loader or its #! interpreter, and theirs, depth levels deep.
func startNeeds(p string, depth int) []string {
	if depth == 0 {
		return nil
	}
	interp := interpreterOf(p)
	if interp == "" {
		return nil
	}
	return append([]string{interp}, startNeeds(interp, depth-1)...)
}

// interpreterOf is the loader an ELF file names, or the interpreter of a
// #! script; "" for anything else or a file that cannot be read.
func interpreterOf(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 4)
	if n, _ := f.Read(head); n < 2 {
		return ""
	}
	if bytes.HasPrefix(head, []byte("#!")) {
		if _, err := f.Seek(2, 0); err != nil {
			return ""
		}
		line, _ := bufio.NewReader(f).ReadString('\n')
		fields := strings.Fields(line)
		if len(fields) == 0 || !filepath.IsAbs(fields[0]) {
			return ""
		}
		return fields[0]
	}
	if !bytes.Equal(head, []byte("\x7fELF")) {
		return ""
	}
	return elfInterpreter(f)
}

// ELF's program header type of the loader's path.
const ptInterp = 3

// elfInterpreter reads the PT_INTERP segment of an ELF file: the header's
// class and byte order, its program headers, and the path the one of type
// PT_INTERP holds. Read by hand: debug/elf would link debug/dwarf and a
// zstd decoder, whose package init every start of pixir would pay.
func elfInterpreter(f io.ReaderAt) string {
	ident := make([]byte, 64) // the 64-bit header's size; the 32-bit one is smaller
	if n, _ := f.ReadAt(ident, 0); n < 52 {
		return ""
	}
	var order binary.ByteOrder
	switch ident[5] { // EI_DATA
	case 1:
		order = binary.LittleEndian
	case 2:
		order = binary.BigEndian
	default:
		return ""
	}
	var phoff uint64
	var phentsize, phnum uint16
	is64 := false
	switch ident[4] { // EI_CLASS
	case 1:
		phoff = uint64(order.Uint32(ident[0x1c:]))
		phentsize, phnum = order.Uint16(ident[0x2a:]), order.Uint16(ident[0x2c:])
	case 2:
		is64 = true
		phoff = order.Uint64(ident[0x20:])
		phentsize, phnum = order.Uint16(ident[0x36:]), order.Uint16(ident[0x38:])
	default:
		return ""
	}
	if (is64 && phentsize < 56) || (!is64 && phentsize < 32) {
		return ""
	}
	ph := make([]byte, phentsize)
	for i := range uint64(phnum) {
		if _, err := f.ReadAt(ph, int64(phoff+i*uint64(phentsize))); err != nil {
			return ""
		}
		if order.Uint32(ph) != ptInterp {
			continue
		}
		var off, size uint64
		if is64 {
			off, size = order.Uint64(ph[8:]), order.Uint64(ph[32:])
		} else {
			off, size = uint64(order.Uint32(ph[4:])), uint64(order.Uint32(ph[16:]))
		}
		if size == 0 || size > 4096 || off > math.MaxInt64 {
			return ""
		}
		b := make([]byte, size)
		if _, err := f.ReadAt(b, int64(off)); err != nil {
			return ""
		}
		return string(bytes.TrimRight(b, "\x00"))
	}
	return ""
}
