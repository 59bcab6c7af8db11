/*
 * linger.c: an LD_PRELOAD library that keeps a program alive at exit, in
 * a destructor, until its stdin is closed (Proc.Wait closes it after
 * DONE). A tracer looks a process up in /proc/<pid> (kernel names, the
 * executable, its cgroup and environment) when its reader handles the
 * process's first event, up to a poll interval after the call; the
 * scenario programs exit right after their last call, before that.
 */
#include <unistd.h>

__attribute__((destructor)) static void linger(void)
{
	char buf[256];
	while (read(0, buf, sizeof buf) > 0)
		;
}
