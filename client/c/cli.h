/* h5ark, the command-line tool: what its parts share. h5ark_cli.c parses the global options,
 * connects and runs a command; cli_server.c, cli_objects.c and cli_files.c hold the commands;
 * cli_text.c prints values and tables; cli_progress.c draws a long request's progress line.
 * Exit status: 0 done, 1 the request failed, 2 bad usage. */
#ifndef H5ARK_CLI_H
#define H5ARK_CLI_H

#include "h5ark.h"

#include <getopt.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_USAGE 2

/* ---- options and usage (h5ark_cli.c) ---- */

extern const char *current_cmd;       /* the command being run, for messages */
extern const struct option no_opts[]; /* --help alone */

int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "h5ark: CODE: message" and returns 1. */
int fail(const h5ark_error *err);
/* A client to the daemon the global options name. */
h5ark_client_t *connect_client(h5ark_error *err);
/* getopt_long over a command's own arguments; returns the option or -1, or -2 with *status
 * set to the exit code for --help (0) and usage errors (2). */
int next_opt(int argc, char **argv, const struct option *opts, int *status);
bool parse_uint(const char *s, uint64_t *out);
int need_uint(const char *opt, const char *s, uint64_t *out);
int need_number(const char *opt, const char *s, h5ark_number *out);
/* -1 when a command that takes nothing got nothing, else the exit status. */
int no_positional(int argc, char **argv);
/* Options that each take a string, numbered from 1000 in opts: values[k] gets option
 * 1000 + k's. -1 when they parsed, else the exit status (help given, or a usage error). */
int string_options(int argc, char **argv, const struct option *opts, const char **values);

/* ---- text (cli_text.c) ---- */

/* A growable string; out of memory ends the program with a message. */
typedef struct {
    char *p;
    size_t len, cap;
} strbuf;

void sb_putn(strbuf *b, const char *s, size_t n);
void sb_puts(strbuf *b, const char *s);
void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
char *sb_take(strbuf *b); /* the text, owned by the caller; b is empty after */
void sb_quote(strbuf *b, const char *s, size_t n);
void sb_float(strbuf *b, double v, bool single);
void sb_value(strbuf *b, const h5ark_value *v);
char *value_text(const h5ark_value *v); /* "-" for none */
char *bytes_text(uint64_t n);           /* "1.5 MiB" */
/* "N unit": bytes in binary units, rows and files as counts. */
char *amount_text(uint64_t n, const char *unit);
char *field_text(const h5ark_value *obj, const char *key);
char *nbytes_text(const h5ark_value *obj);
void print_warnings(const h5ark_value *warnings);
/* Element i of d as it prints (numbers, true/false, quoted strings). */
void print_element(strbuf *b, const h5ark_data *d, uint64_t i);

#define MAX_COLS 10

/* Columns padded to their widest cell; cells owned by the table. */
typedef struct {
    int ncols;
    const char *heads[MAX_COLS];
    char **cells; /* rows * ncols, owned */
    size_t rows, cap;
} table;

void table_add(table *t, char **row);
void table_print(table *t);
void table_free(table *t);
/* Rows of object descriptors: [DATASET] NAME OBJTYPE DTYPE SIZE SHAPE NBYTES. */
void objects_table_init(table *t, bool with_dataset);
void objects_table_add(table *t, const char *dataset, const h5ark_value *obj);

/* ---- the progress line (cli_progress.c) ---- */

typedef struct {
    const char *label;
    char client[64]; /* the identity of the request's socket */
    pthread_t thread;
    bool running; /* the thread was started */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done; /* the reply has come */
} progress_line;

/* Before a request that may run long on client cl (label: the command). */
void progress_begin(progress_line *p, h5ark_client_t *cl, const char *label);
/* The reply has come: the line is cleared before this returns. */
void progress_end(progress_line *p);
/* progress_end, then the warnings of the request on cl (once the line is gone, so that
 * they are not drawn over). */
void progress_done(progress_line *p, h5ark_client_t *cl);

/* ---- the commands ---- */

/* cli_server.c */
int cmd_ping(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_checkpoint(int argc, char **argv);
int cmd_load_checkpoint(int argc, char **argv);
int cmd_shutdown(int argc, char **argv);
int cmd_whoami(int argc, char **argv);
int cmd_reload(int argc, char **argv);
/* cli_objects.c */
int cmd_ls(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_delete(int argc, char **argv);
int cmd_unpack(int argc, char **argv);
int cmd_share(int argc, char **argv);
int cmd_unshare(int argc, char **argv);
/* cli_files.c */
int cmd_save(int argc, char **argv);
int cmd_pack(int argc, char **argv);
int cmd_load(int argc, char **argv);
int cmd_getacl(int argc, char **argv);
int cmd_setacl(int argc, char **argv);
int cmd_writepart(int argc, char **argv);
int cmd_complete(int argc, char **argv);

#endif
