/* h5ark: the command-line tool. Talks to h5arkd through libh5ark and prints what comes back
 * for a person to read. Exit status: 0 done, 1 the request failed, 2 bad usage. */
#include "h5ark.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE 2

static const char *opt_endpoint;
static const char *opt_token_file;
static const char *opt_server_key_file; /* the daemon's CURVE public key: encrypt */
static double opt_timeout = H5ARK_DEFAULT_TIMEOUT_MS / 1000.0;                 /* < 0: forever */
static double opt_connect_timeout = H5ARK_DEFAULT_CONNECT_TIMEOUT_MS / 1000.0; /* < 0: none */

/* ---- small helpers ------------------------------------------------------------------- */

static const char *current_cmd = NULL;

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("h5ark: usage: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (current_cmd)
        fprintf(stderr, "\nRun 'h5ark %s --help' for its options.\n", current_cmd);
    else
        fputs("\nRun 'h5ark --help' for the commands.\n", stderr);
    return EXIT_USAGE;
}

static int fail(const h5ark_error *err) {
    fprintf(stderr, "h5ark: %s: %s\n", h5ark_code_name(err->code), err->message);
    return EXIT_FAILURE;
}

static void print_warnings(const h5ark_value *warnings) {
    for (size_t i = 0; i < h5ark_value_len(warnings); i++) {
        const h5ark_value *w = h5ark_value_at(warnings, i);
        if (w && w->kind == H5ARK_STR) fprintf(stderr, "h5ark: warning: %s\n", w->as.s.ptr);
    }
}

/* A growable string. */
typedef struct {
    char *p;
    size_t len, cap;
} strbuf;

static void sb_putn(strbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            fputs("h5ark: resource_limit: out of memory\n", stderr);
            exit(EXIT_FAILURE);
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_puts(strbuf *b, const char *s) {
    sb_putn(b, s, strlen(s));
}

static void sb_printf(strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(strbuf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof tmp) {
        sb_putn(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) return;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_putn(b, big, (size_t)n);
    free(big);
}

static char *sb_take(strbuf *b) {
    if (!b->p) sb_putn(b, "", 0);
    char *p = b->p;
    memset(b, 0, sizeof *b);
    return p;
}

/* A string quoted for reading back: valid UTF-8 passes through, quotes, backslashes, control
 * characters and invalid bytes are escaped. */
static void sb_quote(strbuf *b, const char *s, size_t n) {
    sb_putn(b, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_putn(b, e, 2);
            i++;
        } else if (c == '\n') {
            sb_puts(b, "\\n"), i++;
        } else if (c == '\t') {
            sb_puts(b, "\\t"), i++;
        } else if (c == '\r') {
            sb_puts(b, "\\r"), i++;
        } else if (c < 0x20 || c == 0x7f) {
            sb_printf(b, "\\u%04x", c), i++;
        } else if (c < 0x80) {
            sb_putn(b, s + i, 1), i++;
        } else {
            /* the length of a well-formed UTF-8 sequence starting here, or 0 */
            size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                         : c >= 0xe0 && c <= 0xef ? 3
                         : c >= 0xf0 && c <= 0xf4 ? 4
                                                  : 0;
            bool ok = len && i + len <= n;
            for (size_t k = 1; ok && k < len; k++)
                ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
            if (ok && len == 3) {
                unsigned char c1 = (unsigned char)s[i + 1];
                ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);
            } else if (ok && len == 4) {
                unsigned char c1 = (unsigned char)s[i + 1];
                ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
            }
            if (ok) {
                sb_putn(b, s + i, len);
                i += len;
            } else {
                sb_printf(b, "\\x%02x", c);
                i++;
            }
        }
    }
    sb_putn(b, "\"", 1);
}

/* The shortest decimal that reads back as the same float. */
static void sb_float(strbuf *b, double v, bool single) {
    if (isnan(v)) return sb_puts(b, "nan");
    if (isinf(v)) return sb_puts(b, v < 0 ? "-inf" : "inf");
    char tmp[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        double back = strtod(tmp, NULL);
        if (single ? (float)back == (float)v : back == v) break;
    }
    /* keep floats recognisable as floats */
    if (!strpbrk(tmp, ".eninf")) strcat(tmp, ".0");
    sb_puts(b, tmp);
}

/* A value as compact JSON-like text (for configuration values and attributes). */
static void sb_value(strbuf *b, const h5ark_value *v) {
    if (!v) return sb_puts(b, "-");
    switch (v->kind) {
    case H5ARK_NIL: sb_puts(b, "nil"); break;
    case H5ARK_BOOL: sb_puts(b, v->as.b ? "true" : "false"); break;
    case H5ARK_INT: sb_printf(b, "%" PRId64, v->as.i); break;
    case H5ARK_UINT: sb_printf(b, "%" PRIu64, v->as.u); break;
    case H5ARK_FLOAT: sb_float(b, v->as.f, false); break;
    case H5ARK_STR: sb_putn(b, v->as.s.ptr, v->as.s.len); break;
    case H5ARK_BIN: sb_printf(b, "<%zu bytes>", v->as.s.len); break;
    case H5ARK_ARRAY:
        sb_puts(b, "[");
        for (size_t i = 0; i < v->as.a.len; i++) {
            if (i) sb_puts(b, ", ");
            const h5ark_value *item = v->as.a.items[i];
            if (item && item->kind == H5ARK_STR)
                sb_quote(b, item->as.s.ptr, item->as.s.len);
            else
                sb_value(b, item);
        }
        sb_puts(b, "]");
        break;
    case H5ARK_MAP:
        sb_puts(b, "{");
        for (size_t i = 0; i < v->as.m.len; i++) {
            if (i) sb_puts(b, ", ");
            sb_quote(b, v->as.m.keys[i], strlen(v->as.m.keys[i]));
            sb_puts(b, ": ");
            const h5ark_value *item = v->as.m.vals[i];
            if (item && item->kind == H5ARK_STR)
                sb_quote(b, item->as.s.ptr, item->as.s.len);
            else
                sb_value(b, item);
        }
        sb_puts(b, "}");
        break;
    }
}

static char *value_text(const h5ark_value *v) {
    strbuf b = {0};
    if (!v || v->kind == H5ARK_NIL)
        sb_puts(&b, "-");
    else
        sb_value(&b, v);
    return sb_take(&b);
}

static char *bytes_text(uint64_t n) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    strbuf b = {0};
    if (n < 1024) {
        sb_printf(&b, "%" PRIu64 " B", n);
    } else {
        double v = (double)n;
        int u = 0;
        while (v >= 1024 && u < 5)
            v /= 1024, u++;
        sb_printf(&b, "%.1f %s", v, units[u]);
    }
    return sb_take(&b);
}

/* ---- tables -------------------------------------------------------------------------- */

#define MAX_COLS 10

typedef struct {
    int ncols;
    const char *heads[MAX_COLS];
    char **cells; /* rows * ncols, owned */
    size_t rows, cap;
} table;

static void table_add(table *t, char **row) {
    if (t->rows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        char **cells = realloc(t->cells, t->cap * (size_t)t->ncols * sizeof *cells);
        if (!cells) {
            fputs("h5ark: resource_limit: out of memory\n", stderr);
            exit(EXIT_FAILURE);
        }
        t->cells = cells;
    }
    memcpy(t->cells + t->rows * (size_t)t->ncols, row, (size_t)t->ncols * sizeof *row);
    t->rows++;
}

/* Display width: code points, which is right for the common scripts. */
static size_t text_width(const char *s) {
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

static void table_print(table *t) {
    size_t width[MAX_COLS];
    for (int c = 0; c < t->ncols; c++) {
        width[c] = text_width(t->heads[c]);
        for (size_t r = 0; r < t->rows; r++) {
            size_t w = text_width(t->cells[r * (size_t)t->ncols + (size_t)c]);
            if (w > width[c]) width[c] = w;
        }
    }
    for (size_t r = 0; r <= t->rows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *s = r == 0 ? t->heads[c] : t->cells[(r - 1) * (size_t)t->ncols + (size_t)c];
            bool last = c == t->ncols - 1;
            fputs(s, stdout);
            if (!last)
                for (size_t k = text_width(s); k < width[c] + 2; k++)
                    putchar(' ');
        }
        putchar('\n');
    }
}

static void table_free(table *t) {
    for (size_t i = 0; i < t->rows * (size_t)t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
}

static char *field_text(const h5ark_value *obj, const char *key) {
    return value_text(h5ark_value_get(obj, key));
}

static char *nbytes_text(const h5ark_value *obj) {
    uint64_t n;
    if (h5ark_value_to_uint64(h5ark_value_get(obj, "nbytes"), &n)) return bytes_text(n);
    return value_text(NULL);
}

/* Rows of object descriptors: [DATASET] NAME OBJTYPE DTYPE SIZE SHAPE NBYTES. */
static void objects_table_init(table *t, bool with_dataset) {
    static const char *const heads[] = {"NAME", "OBJTYPE", "DTYPE", "SIZE", "SHAPE", "NBYTES"};
    memset(t, 0, sizeof *t);
    if (with_dataset) t->heads[t->ncols++] = "DATASET";
    for (size_t i = 0; i < sizeof heads / sizeof *heads; i++)
        t->heads[t->ncols++] = heads[i];
}

static void objects_table_add(table *t, const char *dataset, const h5ark_value *obj) {
    char *row[MAX_COLS];
    int c = 0;
    if (dataset) row[c++] = strdup(dataset);
    row[c++] = field_text(obj, "name");
    row[c++] = field_text(obj, "objtype");
    row[c++] = field_text(obj, "dtype");
    row[c++] = field_text(obj, "size");
    row[c++] = field_text(obj, "shape");
    row[c++] = nbytes_text(obj);
    table_add(t, row);
}

/* ---- connection ---------------------------------------------------------------------- */

/* The file's first word, as h5arkd reads it. With comments (token files), lines starting
 * with '#' are skipped first, so the daemon's own token file serves the client too; a key
 * file's Z85 text may itself start with '#'. */
static int read_token(const char *path, bool comments, char **token, h5ark_error *err) {
    FILE *f = fopen(path, "r");
    if (!f)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot read token file %s: %s", path,
                          strerror(errno));
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *s = buf, *e = buf + n;
    for (;;) {
        s += strspn(s, " \t\r\n");
        if (!comments || *s != '#') break;
        s += strcspn(s, "\n");
    }
    char *nl = strpbrk(s, " \t\r\n"); /* the first word: a daemon's token file may add a role */
    if (nl) e = nl;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    *e = '\0';
    if (!*s) return h5ark_fail(err, H5ARK_UNAUTHORIZED, "token file %s holds no token", path);
    *token = strdup(s);
    memset(buf, 0, sizeof buf);
    return *token ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
}

static h5ark_client_t *connect_client(h5ark_error *err) {
    char *token = NULL, *server_key = NULL;
    if (opt_token_file && read_token(opt_token_file, true, &token, err)) return NULL;
    if (opt_server_key_file && read_token(opt_server_key_file, false, &server_key, err)) {
        free(token);
        return NULL;
    }
    h5ark_client_t *c = h5ark_client_new(opt_endpoint, token, err);
    free(token);
    if (c && server_key && h5ark_client_set_curve(c, server_key, err)) h5ark_client_destroy(&c);
    free(server_key);
    if (c) {
        h5ark_client_set_timeout(c, opt_timeout < 0 ? -1 : (int)(opt_timeout * 1000));
        h5ark_client_set_connect_timeout(
            c, opt_connect_timeout < 0 ? -1 : (int)(opt_connect_timeout * 1000));
    }
    return c;
}

/* ---- the progress line ----------------------------------------------------------------- */

/* A request still running after PROGRESS_DELAY_MS gets a line on stderr, when stderr is a
 * terminal, redrawn in place ("\r") from the daemon's `status` until the reply comes, then
 * cleared. A thread of its own asks, on a client of its own: the request's client is busy
 * waiting for the reply. Any trouble ends the line, never the request. */
#define PROGRESS_DELAY_MS    1000
#define PROGRESS_INTERVAL_MS 250

typedef struct {
    const char *label;
    char client[64]; /* the identity of the request's socket */
    pthread_t thread;
    bool running; /* the thread was started */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done; /* the reply has come */
} progress_line;

/* Wait up to ms for the reply; true once it has come. */
static bool progress_wait(progress_line *p, long ms) {
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    pthread_mutex_lock(&p->mu);
    while (!p->done && pthread_cond_timedwait(&p->cv, &p->mu, &until) != ETIMEDOUT) {}
    bool done = p->done;
    pthread_mutex_unlock(&p->mu);
    return done;
}

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "N unit" for a progress line: bytes in binary units, rows and files as counts. */
static char *amount_text(uint64_t n, const char *unit) {
    if (strcmp(unit, "bytes") == 0) return bytes_text(n);
    strbuf b = {0};
    sb_printf(&b, "%" PRIu64 " %s", n, unit);
    return sb_take(&b);
}

/* The text of one status entry: "96.0 MiB of 256.0 MiB (37%), 190.4 MiB/s", or the time
 * it has run when it reports no measure. *first_done / *first_at: the first measure seen,
 * from which the rate is taken (NAN before). */
static void progress_text(strbuf *b, const char *label, const h5ark_value *entry, double *first_at,
                          uint64_t *first_done) {
    uint64_t done, total;
    const h5ark_value *unit = h5ark_value_get(entry, "unit");
    double elapsed = 0;
    h5ark_value_to_double(h5ark_value_get(entry, "elapsed"), &elapsed);
    sb_printf(b, "%s: ", label);
    if (!unit || unit->kind != H5ARK_STR ||
        !h5ark_value_to_uint64(h5ark_value_get(entry, "done"), &done) ||
        !h5ark_value_to_uint64(h5ark_value_get(entry, "total"), &total)) {
        sb_printf(b, "%.0f s", elapsed);
        return;
    }
    char *d = amount_text(done, unit->as.s.ptr), *t = amount_text(total, unit->as.s.ptr);
    sb_printf(b, "%s of %s", d, t);
    free(d);
    free(t);
    if (total) sb_printf(b, " (%.0f%%)", floor(100.0 * (double)done / (double)total));
    double now = seconds_now();
    if (isnan(*first_at) || done < *first_done) {
        *first_at = now;
        *first_done = done;
    } else if (now - *first_at >= 0.5) {
        double rate = (double)(done - *first_done) / (now - *first_at);
        char *r = amount_text((uint64_t)rate, unit->as.s.ptr);
        sb_printf(b, ", %s/s", r);
        free(r);
    }
}

static void *progress_main(void *arg) {
    progress_line *p = arg;
    if (progress_wait(p, PROGRESS_DELAY_MS)) return NULL;
    h5ark_error err;
    h5ark_client_t *st = connect_client(&err);
    if (!st) return NULL;
    h5ark_client_set_timeout(st, 2000);
    struct winsize ws;
    size_t cols = ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 1 ? ws.ws_col : 80;
    size_t shown = 0; /* the width of the line on the terminal now */
    double first_at = NAN;
    uint64_t first_done = 0;
    strbuf line = {0};
    do {
        h5ark_value *list = NULL;
        if (h5ark_client_status(st, p->client, &list, &err)) break; /* no status: no line */
        const h5ark_value *entry = h5ark_value_at(list, h5ark_value_len(list) - 1);
        if (entry) { /* else still queued for a handler */
            line.len = 0;
            progress_text(&line, p->label, entry, &first_at, &first_done);
            /* one terminal row, or "\r" no longer returns to its start */
            size_t len = line.len < cols - 1 ? line.len : cols - 1;
            fprintf(stderr, "\r%.*s%*s", (int)len, line.p, (int)(shown > len ? shown - len : 0),
                    "");
            fflush(stderr);
            shown = len;
        }
        h5ark_value_destroy(&list);
    } while (!progress_wait(p, PROGRESS_INTERVAL_MS));
    if (shown) {
        fprintf(stderr, "\r%*s\r", (int)shown, "");
        fflush(stderr);
    }
    free(line.p);
    h5ark_client_destroy(&st);
    return NULL;
}

/* Before a request that may run long on client cl (label: the command). */
static void progress_begin(progress_line *p, h5ark_client_t *cl, const char *label) {
    memset(p, 0, sizeof *p);
    if (!isatty(STDERR_FILENO)) return;
    p->label = label;
    snprintf(p->client, sizeof p->client, "%s", h5ark_client_identity(cl));
    pthread_mutex_init(&p->mu, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&p->cv, &attr);
    pthread_condattr_destroy(&attr);
    p->running = pthread_create(&p->thread, NULL, progress_main, p) == 0;
    if (!p->running) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
    }
}

/* The reply has come: the line is cleared before this returns. */
static void progress_end(progress_line *p) {
    if (!p->running) return;
    pthread_mutex_lock(&p->mu);
    p->done = true;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    p->running = false;
}

/* ---- argument parsing ---------------------------------------------------------------- */

typedef struct {
    const char *name;
    const char *summary;
    const char *usage; /* the full help text after the usage line */
    int (*run)(int argc, char **argv);
} command;

static const command *find_command(const char *name);

static void print_command_help(const command *cmd) {
    printf("usage: h5ark [GLOBAL OPTIONS] %s\n%s", cmd->usage, cmd->summary);
}

/* getopt_long over a command's own arguments; returns the option or -1, or sets *status to
 * the exit code for --help (0) and usage errors (2). */
static int next_opt(int argc, char **argv, const struct option *opts, int *status) {
    int idx = 0;
    int c = getopt_long(argc, argv, ":h", opts, &idx);
    if (c == 'h') {
        print_command_help(find_command(current_cmd));
        *status = 0;
        return -2;
    }
    if (c == '?') {
        if (optopt)
            *status = usage_error("unknown option '-%c' for %s", optopt, current_cmd);
        else
            *status = usage_error("unknown option '%s' for %s", argv[optind - 1], current_cmd);
        return -2;
    }
    if (c == ':') {
        *status = usage_error("option '%s' needs a value", argv[optind - 1]);
        return -2;
    }
    return c;
}

static bool parse_uint(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-' || *s == '+') return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno) return false;
    *out = v;
    return true;
}

static int need_uint(const char *opt, const char *s, uint64_t *out) {
    if (!parse_uint(s, out))
        return usage_error("%s takes a whole number of 0 or more, not '%s'", opt, s);
    return 0;
}

static int need_number(const char *opt, const char *s, h5ark_number *out) {
    if (!h5ark_number_parse(s, out)) return usage_error("%s takes a number, not '%s'", opt, s);
    return 0;
}

/* ---- commands ------------------------------------------------------------------------ */

static const struct option no_opts[] = {{"help", no_argument, 0, 'h'}, {0}};

static int no_positional(int argc, char **argv) {
    int status = -1, c;
    while ((c = next_opt(argc, argv, no_opts, &status)) != -1)
        if (c == -2) return status;
    if (optind < argc)
        return usage_error("%s takes no arguments, got '%s'", current_cmd, argv[optind]);
    return -1;
}

static int cmd_ping(int argc, char **argv) {
    int status = no_positional(argc, argv);
    if (status >= 0) return status;
    h5ark_error err;
    h5ark_client_t *c = connect_client(&err);
    if (!c) return fail(&err);
    double rtt;
    int rc = h5ark_client_ping(c, &rtt, &err);
    if (rc == 0) printf("pong from %s in %.3f ms\n", h5ark_client_endpoint(c), rtt * 1000);
    h5ark_client_destroy(&c);
    return rc ? fail(&err) : 0;
}

static int cmd_config(int argc, char **argv) {
    int status = no_positional(argc, argv);
    if (status >= 0) return status;
    h5ark_error err;
    h5ark_client_t *c = connect_client(&err);
    if (!c) return fail(&err);
    h5ark_value *conf = NULL;
    int rc = h5ark_client_getconfig(c, &conf, &err);
    if (rc == 0) {
        size_t w = 0;
        for (size_t i = 0; i < h5ark_value_len(conf); i++)
            if (strlen(conf->as.m.keys[i]) > w) w = strlen(conf->as.m.keys[i]);
        printf("%-*s  %s\n", (int)w, "endpoint", h5ark_client_endpoint(c));
        for (size_t i = 0; i < h5ark_value_len(conf); i++) {
            const char *key = conf->as.m.keys[i];
            const h5ark_value *v = conf->as.m.vals[i];
            char *text = value_text(v);
            uint64_t n;
            bool bytes = false;
            static const char *const byte_keys[] = {"max_memory", "memory_used", "shard_cache",
                                                    "memory_cached", "memory_resident"};
            for (size_t k = 0; k < sizeof byte_keys / sizeof byte_keys[0]; k++)
                bytes |= strcmp(key, byte_keys[k]) == 0;
            if (bytes && h5ark_value_to_uint64(v, &n)) {
                char *human = bytes_text(n);
                printf("%-*s  %s (%s)\n", (int)w, key, text, human);
                free(human);
            } else {
                printf("%-*s  %s\n", (int)w, key, text);
            }
            free(text);
        }
    }
    h5ark_value_destroy(&conf);
    h5ark_client_destroy(&c);
    return rc ? fail(&err) : 0;
}

/* A status entry's done or total, in its unit; "-" when it reports no measure. */
static char *measure_text(const h5ark_value *entry, const char *key) {
    const h5ark_value *unit = h5ark_value_get(entry, "unit");
    uint64_t n;
    if (!unit || unit->kind != H5ARK_STR || !h5ark_value_to_uint64(h5ark_value_get(entry, key), &n))
        return value_text(NULL);
    return amount_text(n, unit->as.s.ptr);
}

static int cmd_status(int argc, char **argv) {
    int status = no_positional(argc, argv);
    if (status >= 0) return status;
    h5ark_error err;
    h5ark_client_t *c = connect_client(&err);
    if (!c) return fail(&err);
    h5ark_value *list = NULL;
    int rc = h5ark_client_status(c, NULL, &list, &err);
    if (rc == 0 && h5ark_value_len(list) == 0) puts("no requests in flight");
    if (rc == 0 && h5ark_value_len(list) > 0) {
        static const char *const heads[] = {"SEQ",     "ID",   "CLIENT", "PEER",   "CMD",
                                            "ELAPSED", "DONE", "TOTAL",  "PERCENT"};
        table t = {.ncols = sizeof heads / sizeof *heads};
        memcpy(t.heads, heads, sizeof heads);
        for (size_t i = 0; i < h5ark_value_len(list); i++) {
            const h5ark_value *e = h5ark_value_at(list, i);
            double elapsed = 0;
            uint64_t done, total;
            h5ark_value_to_double(h5ark_value_get(e, "elapsed"), &elapsed);
            strbuf el = {0}, pct = {0};
            sb_printf(&el, "%.1f s", elapsed);
            if (h5ark_value_to_uint64(h5ark_value_get(e, "done"), &done) &&
                h5ark_value_to_uint64(h5ark_value_get(e, "total"), &total) && total)
                sb_printf(&pct, "%.0f%%", floor(100.0 * (double)done / (double)total));
            else
                sb_puts(&pct, "-");
            char *row[] = {
                field_text(e, "seq"),    field_text(e, "id"),      field_text(e, "client"),
                field_text(e, "peer"),   field_text(e, "cmd"),     sb_take(&el),
                measure_text(e, "done"), measure_text(e, "total"), sb_take(&pct)};
            table_add(&t, row);
        }
        table_print(&t);
        table_free(&t);
    }
    h5ark_value_destroy(&list);
    h5ark_client_destroy(&c);
    return rc ? fail(&err) : 0;
}

static int cmd_ls(int argc, char **argv) {
    static const struct option opts[] = {
        {"recursive", no_argument, 0, 'r'}, {"help", no_argument, 0, 'h'}, {0}};
    bool recursive = false;
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) return status;
        if (c == 'r') recursive = true;
    }
    if (argc - optind != 1) return usage_error("ls takes one FILE");
    const char *path = argv[optind];
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *result = NULL;
    int rc = h5ark_client_lshdf(cl, path, recursive, &result, &err);
    if (rc == 0) {
        const h5ark_value *entries = h5ark_value_get(result, "entries");
        /* ExeTera fields (one entry each) add what ExeTera says of them */
        bool fields = false;
        for (size_t i = 0; i < h5ark_value_len(entries) && !fields; i++) {
            const h5ark_value *k = h5ark_value_get(h5ark_value_at(entries, i), "kind");
            fields = k && k->kind == H5ARK_STR && strcmp(k->as.s.ptr, "field") == 0;
        }
        table t = {.ncols = fields ? 8 : 5,
                   .heads = {"NAME", "KIND", "OBJTYPE", "DTYPE", "SHAPE", "FIELDTYPE", "LENGTH",
                             "COMPLETED"}};
        for (size_t i = 0; i < h5ark_value_len(entries); i++) {
            const h5ark_value *e = h5ark_value_at(entries, i);
            const h5ark_value *p = h5ark_value_get(e, recursive ? "path" : "name");
            if (!p) p = h5ark_value_get(e, "name");
            char *row[8] = {value_text(p), field_text(e, "kind"), field_text(e, "objtype"),
                            field_text(e, "dtype"), field_text(e, "shape")};
            if (fields) {
                row[5] = field_text(e, "fieldtype");
                row[6] = field_text(e, "length");
                row[7] = field_text(e, "completed");
            }
            table_add(&t, row);
        }
        if (t.rows)
            table_print(&t);
        else
            printf("%s holds no groups or datasets\n", path);
        table_free(&t);
    }
    h5ark_value_destroy(&result);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

static int cmd_info(int argc, char **argv) {
    int status = -1, c;
    while ((c = next_opt(argc, argv, no_opts, &status)) != -1)
        if (c == -2) return status;
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *objects = NULL;
    int rc = h5ark_client_info(cl, (const char *const *)argv + optind, (size_t)(argc - optind),
                               &objects, &err);
    if (rc == 0) {
        table t;
        objects_table_init(&t, false);
        for (size_t i = 0; i < h5ark_value_len(objects); i++)
            objects_table_add(&t, NULL, h5ark_value_at(objects, i));
        if (t.rows)
            table_print(&t);
        else
            puts("no objects");
        table_free(&t);
    }
    h5ark_value_destroy(&objects);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

static int cmd_create(int argc, char **argv) {
    enum {
        O_DTYPE = 1000,
        O_SIZE,
        O_FILL,
        O_VALUE,
        O_START,
        O_STOP,
        O_STEP,
        O_LOW,
        O_HIGH,
        O_SEED
    };
    static const struct option opts[] = {{"dtype", required_argument, 0, O_DTYPE},
                                         {"size", required_argument, 0, O_SIZE},
                                         {"fill", required_argument, 0, O_FILL},
                                         {"value", required_argument, 0, O_VALUE},
                                         {"start", required_argument, 0, O_START},
                                         {"stop", required_argument, 0, O_STOP},
                                         {"step", required_argument, 0, O_STEP},
                                         {"low", required_argument, 0, O_LOW},
                                         {"high", required_argument, 0, O_HIGH},
                                         {"seed", required_argument, 0, O_SEED},
                                         {"help", no_argument, 0, 'h'},
                                         {0}};
    h5ark_dtype dtype = H5ARK_FLOAT64;
    uint64_t size = H5ARK_SIZE_AUTO;
    h5ark_fill fill = {0};
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) return status;
        int bad = 0;
        switch (c) {
        case O_DTYPE:
            if (!h5ark_dtype_from_name(optarg, &dtype) || dtype == H5ARK_STRING)
                return usage_error("--dtype is one of int8 int16 int32 int64 uint8 uint16 uint32 "
                                   "uint64 float32 float64 bool, not '%s'",
                                   optarg);
            break;
        case O_SIZE: bad = need_uint("--size", optarg, &size); break;
        case O_FILL: fill.fill = optarg; break;
        case O_VALUE: bad = need_number("--value", optarg, &fill.value); break;
        case O_START: bad = need_number("--start", optarg, &fill.start); break;
        case O_STOP: bad = need_number("--stop", optarg, &fill.stop); break;
        case O_STEP: bad = need_number("--step", optarg, &fill.step); break;
        case O_LOW: bad = need_number("--low", optarg, &fill.low); break;
        case O_HIGH: bad = need_number("--high", optarg, &fill.high); break;
        case O_SEED:
            bad = need_uint("--seed", optarg, &fill.seed);
            fill.has_seed = true;
            break;
        }
        if (bad) return bad;
    }
    if (argc - optind != 1) return usage_error("create takes one NAME");
    static const char *const fills[] = {"empty",  "zeros",    "ones",    "full",
                                        "arange", "linspace", "uniform", "randint"};
    bool known = !fill.fill;
    for (size_t i = 0; !known && i < sizeof fills / sizeof *fills; i++)
        known = strcmp(fill.fill, fills[i]) == 0;
    if (!known)
        return usage_error("--fill is one of empty zeros ones full arange linspace uniform "
                           "randint, not '%s'",
                           fill.fill);
    if (size == H5ARK_SIZE_AUTO && !(fill.fill && strcmp(fill.fill, "arange") == 0))
        return usage_error("create needs --size N (only --fill arange can do without)");
    if (fill.fill && strcmp(fill.fill, "full") == 0 && fill.value.kind == H5ARK_NUM_NONE)
        return usage_error("--fill full needs --value V");
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *obj = NULL;
    progress_line line;
    progress_begin(&line, cl, "create");
    int rc = h5ark_client_create(cl, dtype, size, &fill, argv[optind], &obj, &err);
    progress_end(&line);
    if (rc == 0) {
        table t;
        objects_table_init(&t, false);
        objects_table_add(&t, NULL, obj);
        table_print(&t);
        table_free(&t);
    }
    h5ark_value_destroy(&obj);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

/* Collects repeated --dataset options. */
typedef struct {
    const char **items;
    size_t count;
} str_list;

static void str_list_add(str_list *l, const char *s) {
    const char **items = realloc(l->items, (l->count + 1) * sizeof *items);
    if (!items) {
        fputs("h5ark: resource_limit: out of memory\n", stderr);
        exit(EXIT_FAILURE);
    }
    l->items = items;
    l->items[l->count++] = s;
}

static int cmd_save(int argc, char **argv) {
    enum { O_PATH = 1000, O_DATASET, O_MODE, O_FILE_TYPE, O_COMPRESSION, O_LEVEL };
    static const struct option opts[] = {{"path", required_argument, 0, O_PATH},
                                         {"dataset", required_argument, 0, O_DATASET},
                                         {"mode", required_argument, 0, O_MODE},
                                         {"file-type", required_argument, 0, O_FILE_TYPE},
                                         {"compression", required_argument, 0, O_COMPRESSION},
                                         {"level", required_argument, 0, O_LEVEL},
                                         {"help", no_argument, 0, 'h'},
                                         {0}};
    const char *path = NULL, *mode = NULL, *file_type = NULL, *compression = NULL, *level = NULL;
    str_list datasets = {0};
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) goto out;
        if (c == O_PATH) path = optarg;
        if (c == O_DATASET) str_list_add(&datasets, optarg);
        if (c == O_MODE) mode = optarg;
        if (c == O_FILE_TYPE) file_type = optarg;
        if (c == O_COMPRESSION) compression = optarg;
        if (c == O_LEVEL) level = optarg;
    }
    size_t n = (size_t)(argc - optind);
    if (n == 0)
        status = usage_error("save takes one or more object NAMEs");
    else if (!path)
        status = usage_error("save needs --path P");
    else if (datasets.count && datasets.count != n)
        status =
            usage_error("give one --dataset per NAME (%zu names, %zu datasets)", n, datasets.count);
    else if (mode && strcmp(mode, "truncate") != 0 && strcmp(mode, "append") != 0 &&
             strcmp(mode, "update") != 0)
        status = usage_error("--mode is truncate, append or update, not '%s'", mode);
    else if (file_type && strcmp(file_type, "distribute") != 0 && strcmp(file_type, "single") != 0)
        status = usage_error("--file-type is distribute or single, not '%s'", file_type);
    else if (compression && strcmp(compression, "none") != 0 && strcmp(compression, "gzip") != 0)
        status = usage_error("--compression is none or gzip, not '%s'", compression);
    else if (level && (strlen(level) != 1 || level[0] < '1' || level[0] > '9'))
        status = usage_error("--level is 1 to 9, not '%s'", level);
    else if (level && (!compression || strcmp(compression, "gzip") != 0))
        status = usage_error("--level needs --compression gzip");
    if (status >= 0) goto out;

    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) {
        status = fail(&err);
        goto out;
    }
    h5ark_value *result = NULL;
    h5ark_tohdf_opts topts = {.mode = mode,
                              .file_type = file_type,
                              .compression = compression,
                              .compression_level = level ? level[0] - '0' : 0};
    progress_line line;
    progress_begin(&line, cl, "save");
    int rc = h5ark_client_tohdf_opts(cl, (const char *const *)argv + optind, n,
                                     datasets.count ? datasets.items : NULL, path, &topts, &result,
                                     &err);
    progress_end(&line);
    print_warnings(h5ark_client_warnings(cl));
    if (rc == 0) {
        const h5ark_value *files = h5ark_value_get(result, "files");
        for (size_t i = 0; i < h5ark_value_len(files); i++) {
            char *f = value_text(h5ark_value_at(files, i));
            printf("wrote %s\n", f);
            free(f);
        }
    }
    h5ark_value_destroy(&result);
    h5ark_client_destroy(&cl);
    status = rc ? fail(&err) : 0;
out:
    free(datasets.items);
    return status;
}

/* A schema file of this machine, whole (the daemon takes at most 1 MiB of YAML). */
static char *read_local(const char *path, h5ark_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        h5ark_fail(err, H5ARK_IO_ERROR, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = (1u << 20) + 2, n = 0;
    char *buf = malloc(cap);
    if (buf) n = fread(buf, 1, cap - 1, f);
    bool bad = ferror(f);
    fclose(f);
    if (!buf || bad || n >= cap - 1) {
        if (buf && !bad)
            h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "%s is larger than 1 MiB", path);
        else
            h5ark_fail(err, H5ARK_IO_ERROR, "cannot read %s", path);
        free(buf);
        return NULL;
    }
    buf[n] = '\0';
    return buf;
}

static int cmd_pack(int argc, char **argv) {
    enum { O_DATA = 1000, O_EXPERIMENT, O_LIST, O_NAME };
    static const struct option opts[] = {{"data-schema", required_argument, 0, O_DATA},
                                         {"experiment-schema", required_argument, 0, O_EXPERIMENT},
                                         {"sample-list", required_argument, 0, O_LIST},
                                         {"name", required_argument, 0, O_NAME},
                                         {"help", no_argument, 0, 'h'},
                                         {0}};
    const char *data_path = NULL, *exp_path = NULL, *list = NULL, *name = NULL;
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) return status;
        if (c == O_DATA) data_path = optarg;
        if (c == O_EXPERIMENT) exp_path = optarg;
        if (c == O_LIST) list = optarg;
        if (c == O_NAME) name = optarg;
    }
    size_t n = (size_t)(argc - optind);
    if (!data_path) return usage_error("pack takes --data-schema FILE");
    if ((n == 0) == !list)
        return usage_error("pack takes PATHs (file names or glob patterns) or --sample-list, "
                           "one of them");
    h5ark_error err;
    char *data = read_local(data_path, &err), *exp = NULL;
    if (!data || (exp_path && !(exp = read_local(exp_path, &err)))) {
        free(data);
        return fail(&err);
    }
    h5ark_client_t *cl = connect_client(&err);
    h5ark_value *result = NULL;
    int rc = cl ? h5ark_client_pack(cl, data, exp, (const char *const *)argv + optind, n, list,
                                    name, &result, &err)
                : -1;
    free(data);
    free(exp);
    if (cl) print_warnings(h5ark_client_warnings(cl));
    if (rc == 0) {
        char *samples = field_text(result, "samples");
        char *ids = field_text(h5ark_value_get(result, "sample_ids"), "name");
        printf("%s samples, their ids in %s\n", samples, ids);
        free(samples);
        free(ids);
        const h5ark_value *groups = h5ark_value_get(result, "groups");
        table t;
        objects_table_init(&t, true);
        t.heads[0] = "GROUP";
        for (size_t i = 0; groups && groups->kind == H5ARK_MAP && i < groups->as.m.len; i++)
            objects_table_add(&t, groups->as.m.keys[i], groups->as.m.vals[i]);
        table_print(&t);
        table_free(&t);
        putchar('\n');
        const h5ark_value *fields = h5ark_value_get(result, "fields");
        table f = {.ncols = 6, .heads = {"FIELD", "GROUP", "OFFSET", "LENGTH", "DIMS", "DTYPE"}};
        for (size_t i = 0; fields && fields->kind == H5ARK_MAP && i < fields->as.m.len; i++) {
            const h5ark_value *e = fields->as.m.vals[i];
            char *row[6] = {strdup(fields->as.m.keys[i]), field_text(e, "group"),
                            field_text(e, "offset"),      field_text(e, "length"),
                            field_text(e, "dims"),        field_text(e, "dtype")};
            table_add(&f, row);
        }
        table_print(&f);
        table_free(&f);
    }
    h5ark_value_destroy(&result);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

static int cmd_load(int argc, char **argv) {
    enum { O_DATASET = 1000, O_START, O_STOP };
    static const struct option opts[] = {{"dataset", required_argument, 0, O_DATASET},
                                         {"start", required_argument, 0, O_START},
                                         {"stop", required_argument, 0, O_STOP},
                                         {"help", no_argument, 0, 'h'},
                                         {0}};
    str_list datasets = {0};
    h5ark_readhdf_opts ropts = {.strict_types = true, .stop = UINT64_MAX};
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) goto out;
        if (c == O_DATASET) str_list_add(&datasets, optarg);
        int bad = c == O_START  ? need_uint("--start", optarg, &ropts.start)
                  : c == O_STOP ? need_uint("--stop", optarg, &ropts.stop)
                                : 0;
        if (bad) {
            status = bad;
            goto out;
        }
        if (c == O_START || c == O_STOP) ropts.range = true;
    }
    size_t n = (size_t)(argc - optind);
    if (n == 0) {
        status = usage_error("load takes one or more PATHs (file names or glob patterns)");
        goto out;
    }
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) {
        status = fail(&err);
        goto out;
    }
    h5ark_value *result = NULL;
    progress_line line;
    progress_begin(&line, cl, "load");
    int rc = h5ark_client_readhdf(cl, (const char *const *)argv + optind, n, datasets.items,
                                  datasets.count, &ropts, &result, &err);
    progress_end(&line);
    print_warnings(h5ark_client_warnings(cl));
    if (rc == 0) {
        const h5ark_value *errors = h5ark_value_get(result, "file_errors");
        for (size_t i = 0; i < h5ark_value_len(errors); i++) {
            char *e = value_text(h5ark_value_at(errors, i));
            fprintf(stderr, "h5ark: warning: %s\n", e);
            free(e);
        }
        const h5ark_value *objects = h5ark_value_get(result, "objects");
        table t;
        objects_table_init(&t, true);
        for (size_t i = 0; objects && objects->kind == H5ARK_MAP && i < objects->as.m.len; i++)
            objects_table_add(&t, objects->as.m.keys[i], objects->as.m.vals[i]);
        if (t.rows)
            table_print(&t);
        else
            puts("no objects loaded");
        table_free(&t);
    }
    h5ark_value_destroy(&result);
    h5ark_client_destroy(&cl);
    status = rc ? fail(&err) : 0;
out:
    free(datasets.items);
    return status;
}

static void print_element(strbuf *b, const h5ark_data *d, uint64_t i) {
    const char *p = (const char *)d->values + i * h5ark_dtype_size(d->dtype);
    b->len = 0;
    switch (d->dtype) {
    case H5ARK_INT8: sb_printf(b, "%d", *(const int8_t *)p); break;
    case H5ARK_UINT8: sb_printf(b, "%u", *(const uint8_t *)p); break;
    case H5ARK_INT16: {
        int16_t v;
        memcpy(&v, p, sizeof v);
        sb_printf(b, "%d", v);
        break;
    }
    case H5ARK_UINT16: {
        uint16_t v;
        memcpy(&v, p, sizeof v);
        sb_printf(b, "%u", v);
        break;
    }
    case H5ARK_INT32: {
        int32_t v;
        memcpy(&v, p, sizeof v);
        sb_printf(b, "%" PRId32, v);
        break;
    }
    case H5ARK_UINT32: {
        uint32_t v;
        memcpy(&v, p, sizeof v);
        sb_printf(b, "%" PRIu32, v);
        break;
    }
    case H5ARK_INT64: {
        int64_t v;
        memcpy(&v, p, sizeof v);
        sb_printf(b, "%" PRId64, v);
        break;
    }
    case H5ARK_UINT64: {
        uint64_t v;
        memcpy(&v, p, sizeof v);
        sb_printf(b, "%" PRIu64, v);
        break;
    }
    case H5ARK_FLOAT32: {
        float v;
        memcpy(&v, p, sizeof v);
        sb_float(b, v, true);
        break;
    }
    case H5ARK_FLOAT64: {
        double v;
        memcpy(&v, p, sizeof v);
        sb_float(b, v, false);
        break;
    }
    case H5ARK_BOOLEAN: sb_puts(b, *p ? "true" : "false"); break;
    case H5ARK_STRING: {
        size_t len;
        const char *s = h5ark_data_string(d, i, &len);
        sb_quote(b, s, len);
        break;
    }
    default: sb_puts(b, "?"); break;
    }
}

static int cmd_get(int argc, char **argv) {
    enum { O_START = 1000, O_STOP, O_MAX };
    static const struct option opts[] = {{"start", required_argument, 0, O_START},
                                         {"stop", required_argument, 0, O_STOP},
                                         {"max", required_argument, 0, O_MAX},
                                         {"help", no_argument, 0, 'h'},
                                         {0}};
    uint64_t start = 0, stop = H5ARK_END, max = 100;
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) return status;
        int bad = 0;
        if (c == O_START) bad = need_uint("--start", optarg, &start);
        if (c == O_STOP) {
            bad = need_uint("--stop", optarg, &stop);
            if (!bad && stop == H5ARK_END) bad = usage_error("--stop is too large");
        }
        if (c == O_MAX) bad = need_uint("--max", optarg, &max);
        if (bad) return bad;
    }
    if (argc - optind != 1) return usage_error("get takes one NAME");
    const char *name = argv[optind];
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    /* learn the size first so that --max bounds what is fetched, not only what is printed */
    h5ark_value *objects = NULL;
    int rc = h5ark_client_info(cl, &name, 1, &objects, &err);
    uint64_t size = 0, end = stop, more = 0;
    if (rc == 0) {
        h5ark_value_to_uint64(h5ark_value_get(h5ark_value_at(objects, 0), "size"), &size);
        if (end == H5ARK_END) end = size;
        if (start <= end && end <= size && max && end - start > max) {
            more = end - start - max;
            end = start + max;
        }
    }
    h5ark_value_destroy(&objects);
    h5ark_data d = {0};
    if (rc == 0) rc = h5ark_client_get(cl, name, start, end, &d, &err);
    if (rc == 0) {
        strbuf b = {0};
        for (uint64_t i = 0; i < d.count; i++) {
            print_element(&b, &d, i);
            puts(b.p);
        }
        free(b.p);
        if (more)
            printf("... %" PRIu64 " more (of %" PRIu64 "; use --max 0 to print all)\n", more, size);
    }
    h5ark_data_free(&d);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

static int cmd_delete(int argc, char **argv) {
    int status = -1, c;
    while ((c = next_opt(argc, argv, no_opts, &status)) != -1)
        if (c == -2) return status;
    if (argc - optind < 1) return usage_error("delete takes one or more NAMEs");
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *deleted = NULL;
    int rc = h5ark_client_delete(cl, (const char *const *)argv + optind, (size_t)(argc - optind),
                                 &deleted, &err);
    for (size_t i = 0; rc == 0 && i < h5ark_value_len(deleted); i++) {
        char *s = value_text(h5ark_value_at(deleted, i));
        printf("deleted %s\n", s);
        free(s);
    }
    h5ark_value_destroy(&deleted);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

/* Each part an unpacked descriptor names, as "PATH NAME" (PATH: the components down to it). */
static void print_parts(const h5ark_value *desc, const char *path) {
    const h5ark_value *comps = h5ark_value_get(desc, "components");
    const h5ark_value *objtype = h5ark_value_get(desc, "objtype");
    bool leaf =
        objtype && objtype->kind == H5ARK_STR &&
        (strcmp(objtype->as.s.ptr, "pdarray") == 0 || strcmp(objtype->as.s.ptr, "arrayview") == 0 ||
         strcmp(objtype->as.s.ptr, "strings") == 0);
    if (leaf || !comps) {
        char *name = value_text(h5ark_value_get(desc, "name"));
        printf("%s %s\n", path, name ? name : "?");
        free(name);
        return;
    }
    for (size_t i = 0; i < comps->as.m.len; i++) {
        char sub[1024];
        snprintf(sub, sizeof sub, "%s%s%s", path, *path ? "/" : "", comps->as.m.keys[i]);
        print_parts(comps->as.m.vals[i], sub);
    }
}

static int cmd_unpack(int argc, char **argv) {
    static const struct option opts[] = {
        {"keep", no_argument, 0, 'k'}, {"help", no_argument, 0, 'h'}, {0}};
    int status = -1, c;
    bool keep = false;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) return status;
        if (c == 'k') keep = true;
    }
    if (argc - optind != 1) return usage_error("unpack takes one NAME");
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *desc = NULL;
    int rc = h5ark_client_unpack(cl, argv[optind], keep, &desc, &err);
    if (rc == 0) print_parts(desc, "");
    h5ark_value_destroy(&desc);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

/* share / unshare NAME... --with SUBJECT...: prints "NAME SUBJECT,..." (the grants after) */
static int share_command(int argc, char **argv, bool share) {
    enum { O_WITH = 1000 };
    static const struct option opts[] = {
        {"with", required_argument, 0, O_WITH}, {"help", no_argument, 0, 'h'}, {0}};
    const char *with[64];
    size_t nwith = 0;
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) return status;
        if (nwith == sizeof with / sizeof with[0]) return usage_error("at most 64 --with");
        with[nwith++] = optarg;
    }
    if (argc - optind < 1 || nwith == 0)
        return usage_error("%s takes one or more NAMEs and one or more --with", current_cmd);
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *grants = NULL;
    int rc = h5ark_client_share(cl, (const char *const *)argv + optind, (size_t)(argc - optind),
                                with, nwith, share, &grants, &err);
    for (size_t i = 0; rc == 0 && grants && i < grants->as.m.len; i++) {
        printf("%s", grants->as.m.keys[i]);
        const h5ark_value *list = grants->as.m.vals[i];
        for (size_t k = 0; k < h5ark_value_len(list); k++) {
            char *s = value_text(h5ark_value_at(list, k));
            printf("%s%s", k ? "," : " ", s ? s : "?");
            free(s);
        }
        printf("\n");
    }
    h5ark_value_destroy(&grants);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

/* Options that each take a string, numbered from 1000 in opts: values[k] gets option
 * 1000 + k's. -1 when they parsed, else the exit status (help given, or a usage error). */
static int string_options(int argc, char **argv, const struct option *opts, const char **values) {
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) return status;
        if (c >= 1000) values[c - 1000] = optarg;
    }
    return -1;
}

static int cmd_share(int argc, char **argv) {
    return share_command(argc, argv, true);
}

static int cmd_unshare(int argc, char **argv) {
    return share_command(argc, argv, false);
}

/* ---- ACLs ---- */

/* A JSON value as the wire's (--acl); NULL when out of memory. */
static h5ark_value *json_to_value(const json_t *j) {
    switch (json_typeof(j)) {
    case JSON_OBJECT: {
        h5ark_value *m = h5ark_value_map();
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)j, k, v) {
            if (m && h5ark_value_set(m, k, json_to_value(v))) h5ark_value_destroy(&m);
        }
        return m;
    }
    case JSON_ARRAY: {
        h5ark_value *a = h5ark_value_array();
        for (size_t i = 0; a && i < json_array_size(j); i++)
            if (h5ark_value_push(a, json_to_value(json_array_get(j, i)))) h5ark_value_destroy(&a);
        return a;
    }
    case JSON_STRING: return h5ark_value_strn(json_string_value(j), json_string_length(j));
    case JSON_INTEGER: return h5ark_value_int(json_integer_value(j));
    case JSON_REAL: return h5ark_value_float(json_real_value(j));
    case JSON_TRUE: return h5ark_value_bool(true);
    case JSON_FALSE: return h5ark_value_bool(false);
    default: return h5ark_value_nil();
    }
}

/* One line per entry: SUBJECT and the permissions it grants, comma-separated (- none). */
static void print_acl(const h5ark_value *acl) {
    static const char *const perms[] = {"read",   "create",  "update",
                                        "delete", "readACL", "updateACL"};
    for (size_t i = 0; i < h5ark_value_len(acl); i++) {
        const h5ark_value *e = h5ark_value_at(acl, i), *subject = h5ark_value_get(e, "subject");
        printf("%-16s ", subject && subject->kind == H5ARK_STR ? subject->as.s.ptr : "?");
        int n = 0;
        for (size_t k = 0; k < sizeof perms / sizeof *perms; k++) {
            const h5ark_value *v = h5ark_value_get(e, perms[k]);
            if (v && v->kind == H5ARK_BOOL && v->as.b) printf("%s%s", n++ ? "," : "", perms[k]);
        }
        printf("%s\n", n ? "" : "-");
    }
}

/* getacl PATH: "from FOLDER" (or "from (defaults)"), then the entries. */
static int cmd_getacl(int argc, char **argv) {
    int status = -1, c;
    while ((c = next_opt(argc, argv, no_opts, &status)) != -1)
        if (c == -2) return status;
    if (argc - optind != 1) return usage_error("getacl takes one PATH");
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *res = NULL;
    int rc = h5ark_client_getacl(cl, argv[optind], &res, &err);
    h5ark_client_destroy(&cl);
    if (rc) return fail(&err);
    const h5ark_value *from = h5ark_value_get(res, "from");
    printf("%-16s %s\n", "from",
           from && from->kind == H5ARK_STR ? from->as.s.ptr : "(the defaults)");
    print_acl(h5ark_value_get(res, "acl"));
    h5ark_value_destroy(&res);
    return 0;
}

/* setacl PATH --acl JSON: prints the ACL as written, as getacl does. */
static int cmd_setacl(int argc, char **argv) {
    static const struct option opts[] = {
        {"acl", required_argument, 0, 1000}, {"help", no_argument, 0, 'h'}, {0}};
    const char *text = NULL;
    int status = string_options(argc, argv, opts, &text);
    if (status >= 0) return status;
    if (argc - optind != 1 || !text) return usage_error("setacl takes one PATH and --acl JSON");
    json_error_t jerr;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &jerr);
    if (!j) return usage_error("--acl is not JSON: %s (column %d)", jerr.text, jerr.column);
    if (!json_is_array(j)) {
        json_decref(j);
        return usage_error("--acl is a JSON array of entries, [{\"subject\": ..., ...}]");
    }
    h5ark_value *acl = json_to_value(j), *written = NULL;
    json_decref(j);
    h5ark_error err;
    h5ark_client_t *cl = acl ? connect_client(&err) : NULL;
    if (!acl) h5ark_fail(&err, H5ARK_RESOURCE_LIMIT, "out of memory");
    int rc = cl ? h5ark_client_setacl(cl, argv[optind], acl, &written, &err) : -1;
    h5ark_client_destroy(&cl);
    h5ark_value_destroy(&acl);
    if (rc) return fail(&err);
    print_acl(written);
    h5ark_value_destroy(&written);
    return 0;
}

/* writepart NAME / complete: a field of an ExeTera dataframe in parts; prints
 * "FIELD ROWS" (the field's rows after the request). */
static int field_command(int argc, char **argv, bool part) {
    enum { O_PATH = 1000, O_FIELD, O_FIELDTYPE };
    static const struct option opts[] = {{"path", required_argument, 0, O_PATH},
                                         {"field", required_argument, 0, O_FIELD},
                                         {"fieldtype", required_argument, 0, O_FIELDTYPE},
                                         {"help", no_argument, 0, 'h'},
                                         {0}};
    const char *v[3] = {NULL, NULL, NULL};
    int status = string_options(argc, argv, opts, v);
    if (status >= 0) return status;
    const char *path = v[0], *field = v[1], *fieldtype = v[2];
    int names = argc - optind;
    if (part && names != 1) return usage_error("writepart takes one object NAME");
    if (!part && names != 0) return usage_error("complete takes no NAME");
    if (!part && fieldtype) return usage_error("--fieldtype is for writepart");
    if (!path || !field) return usage_error("%s needs --path P and --field DF/F", current_cmd);
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *result = NULL;
    progress_line line;
    progress_begin(&line, cl, current_cmd);
    int rc = part ? h5ark_client_writepart(cl, path, field, argv[optind], fieldtype, &result, &err)
                  : h5ark_client_complete(cl, path, field, &result, &err);
    progress_end(&line);
    print_warnings(h5ark_client_warnings(cl));
    int64_t rows = 0;
    if (rc == 0 && h5ark_value_to_int64(h5ark_value_get(result, "rows"), &rows))
        printf("%s %lld%s\n", field, (long long)rows, part ? "" : " completed");
    h5ark_value_destroy(&result);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

static int cmd_writepart(int argc, char **argv) {
    return field_command(argc, argv, true);
}

static int cmd_complete(int argc, char **argv) {
    return field_command(argc, argv, false);
}

/* checkpoint [--path P [--name N] [--mode M]] / load-checkpoint --path P --name N: prints
 * "ID OBJECTS objects BYTES bytes SECONDS s". */
static int checkpoint_command(int argc, char **argv, bool load) {
    enum { O_PATH = 1000, O_NAME, O_MODE };
    static const struct option opts[] = {{"path", required_argument, 0, O_PATH},
                                         {"name", required_argument, 0, O_NAME},
                                         {"mode", required_argument, 0, O_MODE},
                                         {"help", no_argument, 0, 'h'},
                                         {0}};
    const char *v[3] = {NULL, NULL, NULL};
    int status = string_options(argc, argv, opts, v);
    if (status >= 0) return status;
    const char *path = v[0], *name = v[1], *mode = v[2];
    if (argc - optind != 0) return usage_error("%s takes no NAME", current_cmd);
    if (load && (!path || !name || mode))
        return usage_error("load-checkpoint needs --path P and --name N");
    if (!path && (name || mode)) return usage_error("--name and --mode need --path");
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *result = NULL;
    progress_line line;
    progress_begin(&line, cl, current_cmd);
    int rc = load ? h5ark_client_load_checkpoint(cl, path, name, &result, &err)
                  : h5ark_client_checkpoint(cl, path, name, mode, &result, &err);
    progress_end(&line);
    print_warnings(h5ark_client_warnings(cl));
    if (rc == 0) {
        char *id = value_text(h5ark_value_get(result, "checkpoint"));
        uint64_t objects = 0, bytes = 0;
        double seconds = 0;
        h5ark_value_to_uint64(h5ark_value_get(result, "objects"), &objects);
        h5ark_value_to_uint64(h5ark_value_get(result, "bytes"), &bytes);
        h5ark_value_to_double(h5ark_value_get(result, "seconds"), &seconds);
        printf("%s %llu objects %llu bytes %.3f s\n", id ? id : "?", (unsigned long long)objects,
               (unsigned long long)bytes, seconds);
        free(id);
    }
    h5ark_value_destroy(&result);
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

static int cmd_checkpoint(int argc, char **argv) {
    return checkpoint_command(argc, argv, false);
}

static int cmd_load_checkpoint(int argc, char **argv) {
    return checkpoint_command(argc, argv, true);
}

static int cmd_shutdown(int argc, char **argv) {
    int status = no_positional(argc, argv);
    if (status >= 0) return status;
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    int rc = h5ark_client_shutdown(cl, &err);
    if (rc == 0) printf("h5arkd at %s is stopping\n", h5ark_client_endpoint(cl));
    h5ark_client_destroy(&cl);
    return rc ? fail(&err) : 0;
}

static int cmd_whoami(int argc, char **argv) {
    int status = no_positional(argc, argv);
    if (status >= 0) return status;
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *me = NULL;
    int rc = h5ark_client_whoami(cl, &me, &err);
    h5ark_client_destroy(&cl);
    if (rc) return fail(&err);
    static const char *const keys[] = {"user", "role", "groups"};
    for (size_t i = 0; i < 3; i++) {
        char *text = value_text(h5ark_value_get(me, keys[i]));
        printf("%-9s %s\n", keys[i], text ? text : "?");
        free(text);
    }
    /* each of usage and quota: what the user has of what they may have */
    static const char *const measures[] = {"memory", "disk", "objects", "requests"};
    const h5ark_value *usage = h5ark_value_get(me, "usage"),
                      *quotas = h5ark_value_get(me, "quotas");
    for (size_t i = 0; i < 4; i++) {
        char *used = value_text(h5ark_value_get(usage, measures[i]));
        const h5ark_value *q = h5ark_value_get(quotas, measures[i]);
        char *quota = q && q->kind != H5ARK_NIL ? value_text(q) : NULL;
        printf("%-9s %s%s%s%s\n", measures[i], used ? used : "?", quota ? " of " : " (no quota)",
               quota ? quota : "", quota && i < 2 ? " bytes" : "");
        free(used);
        free(quota);
    }
    h5ark_value_destroy(&me);
    return 0;
}

static int cmd_reload(int argc, char **argv) {
    int status = no_positional(argc, argv);
    if (status >= 0) return status;
    h5ark_error err;
    h5ark_client_t *cl = connect_client(&err);
    if (!cl) return fail(&err);
    h5ark_value *got = NULL;
    int rc = h5ark_client_reload(cl, &got, &err);
    h5ark_client_destroy(&cl);
    if (rc) return fail(&err);
    char *groups = value_text(h5ark_value_get(got, "groups"));
    uint64_t tokens = 0, users = 0;
    h5ark_value_to_uint64(h5ark_value_get(got, "tokens"), &tokens);
    h5ark_value_to_uint64(h5ark_value_get(got, "users"), &users);
    printf("token file read again: %" PRIu64 " token(s), %" PRIu64 " user(s), groups %s\n", tokens,
           users, groups ? groups : "?");
    free(groups);
    h5ark_value_destroy(&got);
    return 0;
}

static void print_help(void);

static int cmd_help(int argc, char **argv) {
    int status = -1, c;
    while ((c = next_opt(argc, argv, no_opts, &status)) != -1)
        if (c == -2) return status;
    if (argc - optind > 1) return usage_error("help takes at most one COMMAND");
    if (argc - optind == 0) {
        print_help();
        return 0;
    }
    const command *cmd = find_command(argv[optind]);
    if (!cmd) {
        current_cmd = NULL; /* point to the list of commands */
        return usage_error("unknown command '%s'", argv[optind]);
    }
    print_command_help(cmd);
    return 0;
}

static const command commands[] = {
    {"ping", "Check that the daemon answers and print the round-trip time.\n", "ping", cmd_ping},
    {"config", "Print the daemon's configuration.\n", "config", cmd_config},
    {"status",
     "List the requests the daemon is running and how far each has got.\n"
     "For each: the client that sent it (its routing identity, and its address: tcp, ipc),\n"
     "how long it has run, and DONE of TOTAL in bytes, rows or files (- when the request\n"
     "reports no measure).\n",
     "status", cmd_status},
    {"whoami",
     "Print who the token names and what the user holds of each quota.\n"
     "User, role and groups; then for memory, disk, objects and requests in flight what the\n"
     "user has, of what quota (a daemon whose token file names users; without, the user is\n"
     "nil).\n",
     "whoami", cmd_whoami},
    {"reload",
     "Have the daemon read its token file again.\n"
     "With users it takes an admin's token. A bad file is refused with the reason, the\n"
     "tokens in force staying.\n",
     "reload", cmd_reload},
    {"ls",
     "List the groups and datasets of an HDF5 file in the daemon's data directory.\n"
     "An ExeTera field is one entry, of kind field, with its FIELDTYPE, LENGTH and COMPLETED.\n"
     "  --recursive      descend into groups\n",
     "ls FILE [--recursive]", cmd_ls},
    {"info", "Describe the named objects, or all objects when no NAME is given.\n",
     "info [NAME...]", cmd_info},
    {"share",
     "Let users, g:GROUPs or * read the caller's objects, as OWNER/NAME.\n"
     "For a daemon whose token file names users. Prints each NAME and whom it is shared\n"
     "with.\n"
     "  --with S         a user, g:GROUP or * (repeat for several)\n",
     "share NAME... --with S [--with S...]", cmd_share},
    {"unshare", "Take back what share gave. Prints each NAME and whom it is still shared with.\n",
     "unshare NAME... --with S [--with S...]", cmd_unshare},
    {"getacl",
     "Print the ACL that governs a folder (or a file's folder) of the data directory.\n"
     "For a daemon whose token file names users; needs readACL. First the folder whose\n"
     ".h5ark-acl it is (or the defaults), then one line per subject (a user, g:GROUP or\n"
     "default) with the permissions it grants.\n",
     "getacl PATH", cmd_getacl},
    {"setacl",
     "Replace a folder's ACL, atomically, and print it as written.\n"
     "Needs updateACL. A permission left out of an entry is not granted.\n"
     "  --acl JSON       the entries, e.g. '[{\"subject\": \"g:physics\", \"read\": true}]'\n",
     "setacl PATH --acl JSON", cmd_setacl},
    {"create",
     "Create a pdarray NAME in the daemon.\n"
     "  --dtype T        int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64\n"
     "                   bool (default float64)\n"
     "  --size N         number of elements (not needed for --fill arange)\n"
     "  --fill KIND      empty zeros ones full arange linspace uniform randint (default zeros)\n"
     "  --value V        the value of --fill full\n"
     "  --start, --stop  the range of arange (stop excluded) and linspace (stop included)\n"
     "  --step S         the step of arange (default 1)\n"
     "  --low, --high    the range of uniform and randint (high excluded)\n"
     "  --seed N         the random seed of uniform and randint\n",
     "create NAME [--dtype T] --size N [--fill KIND] [--value V] [--start A] [--stop B]\n"
     "       [--step S] [--low L] [--high H] [--seed N]",
     cmd_create},
    {"save",
     "Write objects to HDF5 in the daemon's data directory (Arkouda's layout).\n"
     "  --path P         file name (relative to the data directory)\n"
     "  --dataset D      dataset name for each NAME, in order (default: the object names)\n"
     "  --mode M         truncate (default: new files), append (add datasets to the files)\n"
     "                   or update (replace datasets the files hold)\n"
     "  --file-type F    distribute (default: one file per locale, P_LOCALE0000...) or single\n"
     "  --compression C  none (default: contiguous datasets) or gzip (chunked, shuffled)\n"
     "  --level N        gzip level, 1 to 9 (default 4)\n",
     "save NAME... --path P [--dataset D]... [--mode truncate|append|update]\n"
     "       [--file-type distribute|single] [--compression none|gzip [--level N]]",
     cmd_save},
    {"writepart",
     "Append object NAME's rows to a field of an ExeTera dataframe.\n"
     "The file, dataframe and field are made when missing; the field is left not completed.\n"
     "Prints the field's rows.\n"
     "  --path P         the file (relative to the data directory)\n"
     "  --field DF/F     the dataframe group and the field\n"
     "  --fieldtype T    for a new field (default: the object's own)\n",
     "writepart NAME --path P --field DF/F [--fieldtype T]", cmd_writepart},
    {"complete",
     "Mark a field of an ExeTera dataframe completed; prints its rows.\n"
     "  --path P         the file (relative to the data directory)\n"
     "  --field DF/F     the dataframe group and the field\n",
     "complete --path P --field DF/F", cmd_complete},
    {"load",
     "Read objects from HDF5 files and print the objects created.\n"
     "PATHs are file names or glob patterns relative to the data directory.\n"
     "  --dataset D      read only this dataset; repeat for more (default: all)\n"
     "  --start ROW      first row of the files' concatenation to read (default 0)\n"
     "  --stop ROW       end of the rows, excluded (default: the last row)\n",
     "load PATH... [--dataset D]... [--start ROW] [--stop ROW]", cmd_load},
    {"pack",
     "LBANN sample packing: arrays of the samples of HDF5 files or of a sample list.\n"
     "Applies LBANN's data and experiment schemas (YAML files of this machine) to the samples\n"
     "of HDF5 files (each top-level group a sample) or of an LBANN sample list, and prints the\n"
     "arrays made and where each field lies in them.\n"
     "  --data-schema FILE        the data schema (required)\n"
     "  --experiment-schema FILE  the experiment schema (default: every field)\n"
     "  --sample-list LIST        the samples of this list (relative to the data directory)\n"
     "  --name PREFIX             a prefix for the arrays' names\n",
     "pack --data-schema FILE [--experiment-schema FILE] (PATH... | --sample-list LIST) "
     "[--name PREFIX]",
     cmd_pack},
    {"get",
     "Print the elements of a pdarray or strings object, one per line; strings are quoted.\n"
     "  --start I        first element (default 0)\n"
     "  --stop J         end of the range, excluded (default: the end)\n"
     "  --max N          print at most N elements (default 100; 0 for all)\n",
     "get NAME [--start I] [--stop J] [--max N]", cmd_get},
    {"delete", "Delete objects from the daemon (all or none).\n", "delete NAME...", cmd_delete},
    {"unpack",
     "Take the composite NAME apart: each array and Strings in it as an object of its own.\n"
     "Each is shared, not copied, and printed as COMPONENT NAME; NAME is then deleted.\n"
     "  --keep           keep NAME too\n",
     "unpack NAME [--keep]", cmd_unpack},
    {"checkpoint",
     "Write every object as a checkpoint and print its id, objects, bytes and seconds.\n"
     "Without --path it is a new one in the daemon's --checkpoint-dir.\n"
     "  --path P         the folder P/N of the data directory instead\n"
     "  --name N         the checkpoint's folder in P (default: a new id)\n"
     "  --mode M         error (default: refuse an existing one) or overwrite\n",
     "checkpoint [--path P [--name N] [--mode error|overwrite]]", cmd_checkpoint},
    {"load-checkpoint",
     "Publish the objects of the checkpoint folder P/N, over objects of the same names.\n"
     "P is a folder of the data directory.\n",
     "load-checkpoint --path P --name N", cmd_load_checkpoint},
    {"shutdown", "Ask the daemon to finish in-flight requests and exit.\n", "shutdown",
     cmd_shutdown},
    {"help", "Print the commands, or a command's options.\n", "help [COMMAND]", cmd_help},
};

static const command *find_command(const char *name) {
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (name && strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

static void print_help(void) {
    printf("usage: h5ark [--endpoint URL] [--token-file FILE] [--server-key FILE]\n"
           "             [--timeout SECONDS] [--connect-timeout SECONDS] COMMAND ...\n"
           "\n"
           "Talk to an h5arkd daemon.\n"
           "\n"
           "Global options:\n"
           "  --endpoint URL       the daemon's ZeroMQ endpoint (default $H5ARK_ENDPOINT or %s)\n"
           "  --token-file FILE    file holding the access token (default $H5ARK_TOKEN_FILE)\n"
           "  --server-key FILE    the daemon's CURVE public key (its .pub file): encrypt\n"
           "                       (default $H5ARK_SERVER_KEY)\n"
           "  --timeout SECONDS    how long to wait for a reply (default %g; 0 forever)\n"
           "  --connect-timeout SECONDS\n"
           "                       how long to wait for the daemon to answer at all, asked\n"
           "                       with a ping before the command (default\n"
           "                       $H5ARK_CONNECT_TIMEOUT or %g; 0: as long as --timeout)\n"
           "  --version            print the version\n"
           "  --help               this text\n"
           "\n"
           "Commands:\n",
           H5ARK_DEFAULT_ENDPOINT, H5ARK_DEFAULT_TIMEOUT_MS / 1000.0,
           H5ARK_DEFAULT_CONNECT_TIMEOUT_MS / 1000.0);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        const char *nl = strchr(commands[i].summary, '\n');
        printf("  %-10s %.*s\n", commands[i].name, (int)(nl - commands[i].summary),
               commands[i].summary);
    }
    printf("\nRun 'h5ark help COMMAND' (or 'h5ark COMMAND --help') for a command's options.\n"
           "When stderr is a terminal, a create, save, load, writepart or complete still\n"
           "running after a second shows how far it is on one line there, until it ends.\n");
}

/* The SECONDS of --timeout and --connect-timeout: 0 means no bound (-1). */
static bool parse_seconds(const char *s, double *out) {
    char *end;
    double t = strtod(s, &end);
    if (*end || end == s || !(t >= 0) || t > 2e6) return false;
    *out = t == 0 ? -1 : t;
    return true;
}

int main(int argc, char **argv) {
    enum { O_ENDPOINT = 1000, O_TOKEN_FILE, O_TIMEOUT, O_CONNECT_TIMEOUT, O_VERSION, O_SERVER_KEY };
    static const struct option opts[] = {
        {"endpoint", required_argument, 0, O_ENDPOINT},
        {"token-file", required_argument, 0, O_TOKEN_FILE},
        {"server-key", required_argument, 0, O_SERVER_KEY},
        {"timeout", required_argument, 0, O_TIMEOUT},
        {"connect-timeout", required_argument, 0, O_CONNECT_TIMEOUT},
        {"version", no_argument, 0, O_VERSION},
        {"help", no_argument, 0, 'h'},
        {0}};
    opt_endpoint = getenv("H5ARK_ENDPOINT");
    if (opt_endpoint && !*opt_endpoint) opt_endpoint = NULL;
    opt_token_file = getenv("H5ARK_TOKEN_FILE");
    if (opt_token_file && !*opt_token_file) opt_token_file = NULL;
    opt_server_key_file = getenv("H5ARK_SERVER_KEY");
    if (opt_server_key_file && !*opt_server_key_file) opt_server_key_file = NULL;
    const char *connect_timeout = getenv("H5ARK_CONNECT_TIMEOUT"), *connect_timeout_from = NULL;
    if (connect_timeout && *connect_timeout) connect_timeout_from = "$H5ARK_CONNECT_TIMEOUT";
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (c) {
        case O_ENDPOINT: opt_endpoint = optarg; break;
        case O_TOKEN_FILE: opt_token_file = optarg; break;
        case O_SERVER_KEY: opt_server_key_file = optarg; break;
        case O_TIMEOUT:
            if (!parse_seconds(optarg, &opt_timeout))
                return usage_error("--timeout takes seconds (0 waits forever), not '%s'", optarg);
            break;
        case O_CONNECT_TIMEOUT:
            connect_timeout = optarg;
            connect_timeout_from = "--connect-timeout";
            break;
        case O_VERSION: printf("h5ark %s\n", H5ARK_VERSION_STRING); return 0;
        case 'h': print_help(); return 0;
        case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (connect_timeout_from && !parse_seconds(connect_timeout, &opt_connect_timeout))
        return usage_error("%s takes seconds (0: as long as --timeout), not '%s'",
                           connect_timeout_from, connect_timeout);
    if (optind >= argc) return usage_error("no COMMAND given");
    const command *cmd = find_command(argv[optind]);
    if (!cmd) return usage_error("unknown command '%s'", argv[optind]);
    current_cmd = cmd->name;
    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    optind = 0; /* glibc: start a fresh scan over the command's arguments */
    return cmd->run(sub_argc, sub_argv);
}
