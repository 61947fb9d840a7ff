/* h5ark, the command-line tool: the progress line of a long request (see cli.h). */
#include "cli.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

/* A request still running after PROGRESS_DELAY_MS gets a line on stderr, when stderr is a
 * terminal, redrawn in place ("\r") from the daemon's `status` until the reply comes, then
 * cleared. A thread of its own asks, on a client of its own: the request's client is busy
 * waiting for the reply. Any trouble ends the line, never the request. */
#define PROGRESS_DELAY_MS    1000
#define PROGRESS_INTERVAL_MS 250

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

void progress_begin(progress_line *p, h5ark_client_t *cl, const char *label) {
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

void progress_end(progress_line *p) {
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

void progress_done(progress_line *p, h5ark_client_t *cl) {
    progress_end(p);
    print_warnings(h5ark_client_warnings(cl));
}
