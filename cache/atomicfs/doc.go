// Package atomicfs holds piship's one way of replacing a file so that a
// reader sees the old bytes or the new ones, never half of them (a
// temporary sibling in the same directory, flushed when asked, renamed
// over the destination), and its one rename policy: a rename that Windows
// refuses while a scanner or indexer holds a handle is retried on a
// schedule kept as data (InstallDelays, CacheDelays). It is also the one
// way piship opens a file it reads by a name someone else supplies
// (OpenRegular, ReadRegular, OpenRegularIn: a regular file or a refusal,
// never an open that waits on a named pipe). For the writers that create
// or read thousands of files (an extraction, a delta's Apply) it keeps a
// handle per directory opened from its parent's (DirCache), whose Dir
// creates and reads a file (Create, ReadFull) through its directory's
// descriptor with the fewest system calls on Linux (CreateAt, ReadFullAt)
// and through its os.Root elsewhere; an install's copy of a directory
// tree (stages/home) opens each directory on both sides (OpenDir) and
// copies from one Dir to the other the same way (CopyTo, CopyAt). It imports only the
// standard library, so the cache (which may import nothing under stages/)
// and the launcher's receipt package can both use it.
package atomicfs
