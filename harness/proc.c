/* proc.c - run a child program without a shell (see dl_proc.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../ref/dl_common.h"
#include "dl_proc.h"

int dl_proc_run(const char *const argv[], int in_fd, int out_fd, int err_fd, const char *const env[], int *status)
{
    int pfd[2];
    *status = -1;
    if (pipe(pfd) != 0) return dl_fail("cannot run %s: pipe: %s", argv[0], strerror(errno));
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return dl_fail("cannot run %s: fork: %s", argv[0], strerror(errno));
    }
    if (pid == 0) {
        close(pfd[0]);
        fcntl(pfd[1], F_SETFD, FD_CLOEXEC);
        if (in_fd < 0) in_fd = open("/dev/null", O_RDONLY);
        if (in_fd >= 0 && in_fd != 0) dup2(in_fd, 0);
        if (out_fd >= 0 && out_fd != 1) dup2(out_fd, 1);
        if (err_fd >= 0 && err_fd != 2) dup2(err_fd, 2);
        for (int i = 0; env && env[i] && env[i + 1]; i += 2) setenv(env[i], env[i + 1], 1);
        execv(argv[0], (char *const *)argv);
        int e = errno;
        ssize_t w = write(pfd[1], &e, sizeof e); /* tell the parent why */
        (void)w;
        _exit(127);
    }
    close(pfd[1]);
    int child_errno = 0;
    ssize_t got = read(pfd[0], &child_errno, sizeof child_errno);
    close(pfd[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) return dl_fail("cannot run %s: waitpid: %s", argv[0], strerror(errno));
    }
    if (got == (ssize_t)sizeof child_errno) return dl_fail("cannot run %s: %s", argv[0], strerror(child_errno));
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : -1;
    return 0;
}

int dl_proc_self_exe(char *buf, unsigned long n)
{
    ssize_t k = readlink("/proc/self/exe", buf, n - 1);
    if (k <= 0) return dl_fail("cannot read /proc/self/exe: %s", strerror(errno));
    buf[k] = 0;
    return 0;
}
