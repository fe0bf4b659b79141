// Package merge brings an isolated child's work back into the workspace
// (merge-back): what the child added, changed, deleted and chmodded in its
// snapshot is merged into the workspace as it is now, three-way against the
// snapshot's base (what each file was when the snapshot was taken, see
// runtime/snapshot).
//
// # Per file
//
//   - A file the workspace did not change since the snapshot takes the
//     child's version (a fast-forward); a file only the child added is
//     added; a file the child deleted and the workspace did not change is
//     deleted; a change of permission bits alone is applied when the
//     workspace kept the base's bits.
//   - A text file both sides changed is merged hunk by hunk by the real
//     `git merge-file` (the workspace need not be a git repository): git's
//     merge is what people know, and a hand-written one would be the place
//     bugs hide. Hunks both sides changed differently are a conflict. The
//     common case where each side changed one run of lines, far apart, is
//     merged in process without starting git (mergeApart): its result is
//     provably the bytes git writes, and a fuzz test holds it to that.
//   - Conflicts, reported per file (and per hunk for content): the same
//     hunk changed on both sides; deleted on one side and changed on the
//     other; added on both sides with different contents; both sides
//     changed a file that is not text (binary), or a text file whose base
//     content was not kept (larger than snapshot.MaxBaseSize); a change of
//     type (file, link); a file outside the child's write set; a path
//     beneath a folder that is a link (or a file) in the workspace, which
//     a merge never writes through, at the plan (see linkOnTheWay) or at
//     the apply, which makes every operation by name in a folder it
//     opened without following links (see wsDirs), so that a link made
//     on the way meanwhile is never followed either. A
//     conflicting file is not written. For a content conflict, the child's
//     snapshot gets the file with conflict markers and its base becomes the
//     workspace's version, so the child (or whoever edits its snapshot)
//     resolves it there and a later merge brings the resolution as a
//     fast-forward; a file that still holds those markers is refused.
//
// After a merge, the base of every merged file is the child's version, so
// the child's change list names only what is not merged yet, and a child
// that goes on working is merged against what it had when last merged.
//
// # Crash-safe apply
//
// Nothing in the workspace is written before the whole plan is staged:
// every new content in .pixir/merges/<id>/stage/ (same filesystem, so a
// rename moves it), then the journal (journal.json) of every operation with
// the state each path must have before and will have after. Writing the
// journal is the commit point. Each file is then replaced by a rename, so
// it is either old or new, never half written; a process killed in the
// middle leaves the journal, and Recover (run when a session opens in the
// workspace, and before every merge) finishes it: an operation whose path
// already has its after state is done, one whose path still has its before
// state is done now, and one whose path has anything else (someone changed
// it since) is left alone. A merge that died before its journal was written
// changed nothing and its staging is removed. A file a merge replaces or
// deletes keeps a second name in the merge's folder until the merge is
// done, and that folder is removed in the background after Merge returns
// (Wait waits for it; Runtime.Close calls it): on a disk that frees blocks
// synchronously (ext4 with discard), freeing the old versions was most of
// a merge's time, and nobody needs to wait for it. Merges of one
// workspace, and snapshots' copies of it, are kept apart by the
// workspace's lock (.pixir/workspace.lock, runtime/wslock), which a merge
// takes only to apply (after its plan and question: each path is checked
// again then) and Recover to finish; nothing is fsynced, so the
// guarantee is against a process dying (kill -9), not against the machine
// losing power.
//
// # Through the editor
//
// When the client offers fs/write_text_file, text files are written
// through it (so the editor sees the edits as its own); deletions, links,
// binary files and permission bits are applied locally.
package merge
