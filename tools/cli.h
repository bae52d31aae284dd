/* Shared pieces of the shardsearch subcommands: options, loading, messages. */
#ifndef SHS_CLI_H
#define SHS_CLI_H

#include <stdbool.h>

#include "io.h"

/* Exit codes of the command. */
enum { SHS_EXIT_OK = 0, SHS_EXIT_FAIL = 1, SHS_EXIT_USAGE = 2, SHS_EXIT_NOFIT = 3 };

/* Each subcommand: argc/argv start at the subcommand's name. Returns an exit code. */
int shs_cmd_convert(int argc, char **argv);
int shs_cmd_info(int argc, char **argv);
int shs_cmd_gen(int argc, char **argv);
int shs_cmd_annotate(int argc, char **argv);
int shs_cmd_explain(int argc, char **argv);
int shs_cmd_evaluate(int argc, char **argv);
int shs_cmd_hardware(int argc, char **argv);
int shs_cmd_plot(int argc, char **argv);

/* Parses "proto" / "text" (also "pb" / "hlo") into *fmt; false when s names neither. */
bool shs_cli_format(const char *s, shs_format *fmt);

/* Loads and verifies path (fmt AUTO: by extension or content), printing the error to stderr
 * as "shardsearch: PATH: ..." on failure. Returns the module (caller frees with
 * shs_module_free) or NULL. */
shs_module *shs_cli_load(const char *path, shs_format fmt, bool verify);

/* True when both paths name the same existing file. */
bool shs_cli_same_file(const char *a, const char *b);

/* Prints JSON object o to stdout with two-space indents, reals to precision significant digits,
 * and releases o (which may be NULL after a failed allocation). Returns SHS_OK or SHS_ENOMEM. */
struct json_t;
int shs_cli_put_json(struct json_t *o, int precision);

/* Prints "shardsearch: CMD: msg" and a pointer to --help to stderr; returns SHS_EXIT_USAGE. */
int shs_cli_usage_error(const char *cmd, const char *fmt, ...) SHS_PRINTF(2, 3);

#endif
