/* h5ark-users-entry: what users cost the entry of a request, in process, without sockets.
 * A request's arrival, admission and end (entry_accept, entry_run of a run that does
 * nothing, entry_done) timed without a token file (the reference), with an old-style token
 * file and with a token file of users (TOKENS tokens), runs alternating between the three:
 * nanoseconds a request, median (min, max) of the runs, and each against the reference.
 *
 *   build/bench/h5ark-users-entry [runs] [tokens]
 */
#include "config.h"
#include "entry.h"
#include "measure.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

config_t config; /* the daemon's is defined in main.c */

#define REQUESTS 200000

static int nothing(void *door, const caller *who, h5ark_error *err) {
    (void)door, (void)who, (void)err;
    return 0;
}

/* Nanoseconds a request, with the table t put in force (NULL: no token file). */
static double per_request(users_table *t, const char *token) {
    users_install(t);
    size_t len = token ? strlen(token) : 0;
    double t0 = now();
    for (int i = 0; i < REQUESTS; i++) {
        request req = {0};
        h5ark_error err;
        entry_call c = {.req = &req,
                        .name = "ping",
                        .read_only = true,
                        .ranks = RANKS_ZERO,
                        .unlisted = true,
                        .token = token,
                        .token_len = len,
                        .run = nothing};
        if (entry_accept(&req, token, len, &err) || entry_run(&c, &err)) {
            fprintf(stderr, "h5ark-users-entry: %s\n", err.message);
            exit(1);
        }
        entry_done(&req);
    }
    return (now() - t0) / REQUESTS * 1e9;
}

static users_table *parse(const char *text) {
    users_table *t;
    char why[512];
    if (users_parse(text, strlen(text), "bench", &t, why, sizeof why)) {
        fprintf(stderr, "h5ark-users-entry: %s\n", why);
        exit(1);
    }
    return t;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv) {
    int runs = argc > 1 ? atoi(argv[1]) : 7, ntokens = argc > 2 ? atoi(argv[2]) : 50;
    if (runs < 1 || runs > 1000 || ntokens < 1 || ntokens > 10000) {
        fprintf(stderr, "usage: h5ark-users-entry [runs 1..1000] [tokens 1..10000]\n");
        return 2;
    }
    /* the token given is the last line's: every token is compared whichever matches */
    char *old = malloc((size_t)ntokens * 64), *named = malloc((size_t)ntokens * 96);
    size_t o = 0, u = 0;
    for (int i = 0; old && named && i < ntokens; i++) {
        o += (size_t)sprintf(old + o, "token-%06d%s\n", i, i % 2 ? " read" : "");
        u += (size_t)sprintf(named + u, "token-%06d %s user=u%d groups=g%d,all quota.requests=64\n",
                             i, i % 2 ? "read" : "write", i, i % 5);
    }
    if (!old || !named) return 1;
    const char *texts[3] = {NULL, old, named};
    char given[32];
    snprintf(given, sizeof given, "token-%06d", ntokens - 1);
    const char *names[3] = {"no token file", "old-style tokens", "users"};
    double *ns[3];
    for (int k = 0; k < 3; k++)
        ns[k] = calloc((size_t)runs, sizeof *ns[k]);
    for (int r = 0; r < runs; r++)
        for (int k = 0; k < 3; k++) /* a table of its own each time: installing takes it */
            ns[k][r] = per_request(texts[k] ? parse(texts[k]) : NULL, texts[k] ? given : NULL);
    users_install(NULL);
    printf("%d requests a run, %d runs, %d tokens; ns a request, median (min, max); the "
           "reference's median over this (extremes)\n",
           REQUESTS, runs, ntokens);
    for (int k = 0; k < 3; k++)
        qsort(ns[k], (size_t)runs, sizeof *ns[k], cmp);
    double ref = ns[0][runs / 2];
    for (int k = 0; k < 3; k++)
        printf("%-17s %8.1f (%.1f, %.1f)   x%.3f (%.3f, %.3f)\n", names[k], ns[k][runs / 2],
               ns[k][0], ns[k][runs - 1], ref / ns[k][runs / 2], ref / ns[k][runs - 1],
               ref / ns[k][0]);
    for (int k = 0; k < 3; k++)
        free(ns[k]);
    free(old);
    free(named);
    return 0;
}
