/* cmd_run.c - placeholder: `run`, `list`, `info` are being written (issue 3). */
#include "../ref/dl_common.h"
#include "dl_cli.h"

int dl_cmd_run(int argc, char **argv) { dl_fail("run: not implemented yet"); return dl_cli_error("run"); }
int dl_cmd_list(int argc, char **argv) { dl_fail("list: not implemented yet"); return dl_cli_error("list"); }
int dl_cmd_info(int argc, char **argv) { dl_fail("info: not implemented yet"); return dl_cli_error("info"); }
