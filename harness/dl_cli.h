/* dl_cli.h - the decodelab subcommands. Each takes argv after the subcommand
 * name (argv[0] is the subcommand), returns the process exit status: 0 ok,
 * 1 a check failed (a verdict of FAIL, a file that does not verify), 2 bad
 * input (one line on stderr naming the file/flag, the field and the value). */
#ifndef DL_CLI_H
#define DL_CLI_H

#include <stdio.h>

#include "../ref/dl_ref.h"
#include "dl_golden.h"

int dl_cmd_golden(int argc, char **argv);   /* harness/cmd_golden.c */
int dl_cmd_inspect(int argc, char **argv);  /* harness/cmd_inspect.c */
int dl_cmd_check(int argc, char **argv);    /* harness/cmd_check.c */
int dl_cmd_run(int argc, char **argv);      /* harness/cmd_run.c (the work: harness/run.c) */
int dl_cmd_list(int argc, char **argv);     /* harness/cmd_list.c */
int dl_cmd_info(int argc, char **argv);     /* harness/cmd_info.c */
int dl_cmd_compare(int argc, char **argv);  /* harness/cmd_compare.c */
int dl_cmd_sass(int argc, char **argv);     /* harness/cmd_sass.c */
int dl_cmd_ncu(int argc, char **argv);      /* harness/cmd_ncu.c */
int dl_cmd_experiment(int argc, char **argv); /* harness/cmd_experiment.c */
int dl_cmd_probe(int argc, char **argv);    /* harness/cmd_probe.c (kernels: gpu/e2_probes.cu) */

/* Option parsing and validation alone (no work, no files): 0 ok, 1 --help was
 * printed, -1 bad input (recorded). For the fuzzers in tests/fuzz/. */
int dl_cmd_golden_parse(int argc, char **argv);

/* Set one field of a case being built, by its `decodelab golden` option name (without the
 * dashes; '_' accepted for '-'; "preset" sets the head shape), with golden's own checks on
 * the value: how the experiment runner builds and validates its sweep points as
 * configurations. batch_given: the point sets the batch too (a --seq-len list must then match
 * it). Returns 0 or -1 with dl_fail naming --NAME and the value. */
int dl_golden_set(dl_config *c, dl_model_params *p, const char *name, const char *value, int batch_given);
int dl_cmd_run_parse(int argc, char **argv);

/* For subcommands that take one FILE and --help (harness/cmd_inspect.c):
 * returns 0 with *file set, 1 after printing help(stdout), -1 on error (recorded). */
int dl_cli_one_file(const char *cmd, int argc, char **argv, const char **file, void (*help)(FILE *));

/* A subcommand that reads one golden FILE (check, inspect): dl_cli_one_file, dl_golden_read,
 * then body(file, g), then the file is freed. Returns body's exit status, 0 after --help,
 * 2 after the error line of a bad argument or file. */
int dl_cli_golden_cmd(const char *cmd, int argc, char **argv, void (*help)(FILE *),
                      int (*body)(const char *file, const dl_golden *g));

/* Print "decodelab <cmd>: <dl_last_error()>" to stderr and return 2. */
int dl_cli_error(const char *cmd);

#endif
