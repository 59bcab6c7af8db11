// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
// The current task's open file of a descriptor, read through its
// descriptor table: the one walk of it the BPF objects share (the genai
// capture's, to find a connection's socket; genai/node's, a model
// file's inode). Include it after <bpf/bpf_core_read.h>.
#ifndef XPUSCOPE_FD_BPF_H
#define XPUSCOPE_FD_BPF_H

// The kernel's types as far as the walk reads them, relocated by name at
// load (CO-RE): a flavour of their own (___fd), so that an object's own
// shadow of task_struct or file, with the fields it reads, stays its own.
struct fdtable___fd {
	unsigned int max_fds;
	void **fd;
} __attribute__((preserve_access_index));

struct files_struct___fd {
	struct fdtable___fd *fdt;
} __attribute__((preserve_access_index));

struct task_struct___fd {
	struct files_struct___fd *files;
} __attribute__((preserve_access_index));

// fd_file returns the struct file of the current task's descriptor fd,
// or NULL where fd is past its table or not open. The caller casts it to
// its own shadow of struct file.
static __always_inline void *fd_file(__u64 fd)
{
	struct task_struct___fd *task = (void *)bpf_get_current_task();
	struct fdtable___fd *fdt = BPF_CORE_READ(task, files, fdt);
	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	void **fds = BPF_CORE_READ(fdt, fd);
	void *f = 0;
	if (bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]))
		return 0;
	return f;
}

#endif
