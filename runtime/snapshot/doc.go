// Package snapshot makes the isolated workspace of a Subagent: a copy of the
// parent workspace that the child may change freely, and the list of what it
// changed when it ends.
//
// # What is copied
//
// Take copies every directory, regular file and symbolic link of the source
// tree except what [Excluded] names and except directories tagged as caches
// (a CACHEDIR.TAG file with the standard signature, see
// https://bford.info/cachedir/; Cargo's target/, pytest and mypy caches carry
// one). Symbolic links are recreated as links with the same target, never
// followed: a link that leads outside the workspace stays a link, and the
// child's own workspace confinement refuses it. Sockets, FIFOs and devices are
// skipped, and so are files and folders the process may not read; both are
// listed in [Manifest.Skipped]. Modes (permission, setuid, setgid, sticky
// bits) and modification times of files and directories are preserved;
// owners, extended attributes and hard links are not (a hard-linked pair
// becomes two files).
//
// # Copy-on-write and the parallel copy
//
// Each file is first cloned with the Linux FICLONE ioctl, which shares the
// data blocks on filesystems that support reflinks (Btrfs, XFS, bcachefs,
// OCFS2); when the filesystem refuses (ext4, tmpfs, a copy across
// filesystems), that file and the rest of the snapshot are copied instead.
// Files are copied by a bounded pool of 2×GOMAXPROCS goroutines (at least
// 4) that all end when the copy fails or the context is cancelled. A
// cancelled Take returns ctx.Err() promptly and leaves a partial tree the
// caller removes with [Remove].
//
// # Change lists
//
// Take records a fingerprint of every file it copies (CRC-32C and CRC-32,
// see [SumAlgorithm]), computed from the bytes as they are written (on a
// clone, from the source's bytes), so [Manifest.Changes] reports a file as
// Changed when its content differs even if the child restored its size and
// modification time. Hashing at Take costs a pass over the data in memory;
// the CRCs run in hardware at over 10 GB/s, where SHA-256 (about 1 GB/s
// here) would have made a snapshot slower than `cp -a`. To avoid reading the
// whole workspace again when a child ends, Changes trusts a file without
// reading it only when it has the recorded size and modification time and a
// status-change time (ctime) before [Manifest.Mark], the ctime of the
// snapshot root after the last file was made: a process cannot set ctime,
// and every write, chmod, rename or new file after the Take gets a ctime at
// or after Mark (a file from the Take's last clock tick is read anyway, the
// "racily clean" rule of Git's index). Only a wall clock stepped backwards
// between the Take and a same-size rewrite with a restored mtime could slip
// through. Every other file of the recorded size is read and its
// fingerprint compared. A change of mode alone is not a change of content and
// is not listed. A file that grows while it is copied is copied to the size
// it had when it was opened.
//
// # Garbage collection
//
// The Subagents Manager applies the rule; this package gives it [Remove] and
// [Sweep]. A snapshot lives as long as someone may still collect its files:
//
//   - close_agent on a child in a terminal status removes the child's
//     snapshot directory, after the child's change list is in its result;
//   - closing a parent session removes the snapshots of its children that were
//     never closed (they are terminal by then, or get cancelled first);
//   - snapshots left by a process that died are removed by [Sweep] over
//     <workspace>/.pixir/subagents when the Manager starts on that workspace,
//     with a keep function that answers true for every Subagent id a loaded
//     session still lists as not closed, so a reloaded (detached) child keeps
//     its files until it is closed.
//
// A shared-mode child has no snapshot and nothing to collect.
package snapshot
