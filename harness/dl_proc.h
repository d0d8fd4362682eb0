/* dl_proc.h - run a child program without a shell (fork + execv), for the
 * subcommands that drive external tools (cuobjdump, c++filt, ncu) or the
 * decodelab binary itself (experiments). */
#ifndef DL_PROC_H
#define DL_PROC_H

#ifdef __cplusplus
extern "C" {
#endif

/* Run argv[0] (a path; argv NULL-terminated) and wait for it. in_fd, out_fd,
 * err_fd become its stdin/stdout/stderr (-1: /dev/null for stdin, inherited
 * for stdout/stderr). env: NULL, or pairs {name, value, name, value, ..., NULL}
 * set in the child only. *status: the exit status, or 128 + signal.
 * Returns 0 when the child ran (whatever its status), -1 (recorded) when it
 * could not be started. */
int dl_proc_run(const char *const argv[], int in_fd, int out_fd, int err_fd, const char *const env[], int *status);

/* The path of the running executable (/proc/self/exe), into buf. */
int dl_proc_self_exe(char *buf, unsigned long n);

#ifdef __cplusplus
}
#endif
#endif
