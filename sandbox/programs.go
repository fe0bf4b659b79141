package sandbox

import (
	"bufio"
	"bytes"
	"debug/elf"
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
	if !bytes.Equal(head, []byte(elf.ELFMAG)) {
		return ""
	}
	ef, err := elf.NewFile(f)
	if err != nil {
		return ""
	}
	for _, prog := range ef.Progs {
		if prog.Type != elf.PT_INTERP {
			continue
		}
		b := make([]byte, prog.Filesz)
		if _, err := prog.ReadAt(b, 0); err != nil {
			return ""
		}
		return string(bytes.TrimRight(b, "\x00"))
	}
	return ""
}
