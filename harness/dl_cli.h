/* dl_cli.h - the decodelab subcommands. Each takes argv after the subcommand
 * name (argv[0] is the subcommand), returns the process exit status: 0 ok,
 * 1 a check failed (a verdict of FAIL, a file that does not verify), 2 bad
 * input (one line on stderr naming the file/flag, the field and the value). */
#ifndef DL_CLI_H
#define DL_CLI_H

int dl_cmd_golden(int argc, char **argv);   /* harness/cmd_golden.c */
int dl_cmd_inspect(int argc, char **argv);  /* harness/cmd_inspect.c */
int dl_cmd_check(int argc, char **argv);    /* harness/cmd_check.c */
int dl_cmd_run(int argc, char **argv);      /* harness/cmd_run.c */
int dl_cmd_list(int argc, char **argv);     /* harness/cmd_run.c */
int dl_cmd_info(int argc, char **argv);     /* harness/cmd_run.c */

/* Print "decodelab <cmd>: <dl_last_error()>" to stderr and return 2. */
int dl_cli_error(const char *cmd);

#endif
