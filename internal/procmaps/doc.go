// Package procmaps parses /proc/<pid>/maps and answers the two questions a
// uprobe tracer asks of it: which mapping holds a user-space address (and so
// which file, at which file offset), and where that file can be opened from
// outside the process's mount namespace.
//
// Parse is a pure function over the text of a maps file; ReadPID reads one
// under a procfs root that tests and containerised agents can change
// (/host/proc, a fixture). Both are bounded: a line longer than MaxLineLen or
// a file with more than MaxMappings mappings is an error, never a large
// allocation.
//
// Find turns an address into its Mapping, and Mapping.FileOffset turns the
// address into an offset in the mapped file, which is what a symbol table
// (package elfsym) is searched with. The file itself is best opened through
// MapFilesPath, which works for deleted files and files in other mount
// namespaces; RootPath is the fallback where map_files is not readable.
//
// The Dev field uses the encoding of unix.Mkdev (and of glibc's makedev), so
// Dev and Inode together identify a file the same way stat(2) does.
package procmaps
