/* The daemon's configuration, read once at start by main.c and then only read. */
#ifndef H5ARK_CONFIG_H
#define H5ARK_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char endpoint[1024];
    char arkouda_endpoint[1024]; /* Arkouda's dialect (arkouda/); empty: off */
    int locales;
    char data_dir[PATH_MAX]; /* absolute, symlinks resolved */
    uint64_t max_memory;
    uint64_t shard_cache; /* freed shard memory kept for reuse (shardcache.h) */
    /* --token-file, or NULL: no authentication. Its tokens, roles and users are users.h's
     * table (re-read by `reload`); a read token may only run commands that create and
     * change nothing (see command_def.read_only). */
    const char *token_file;
    char curve_secret[41]; /* Z85 server secret key; empty: no encryption */
    int handlers;          /* request handler threads */
    size_t max_queue;      /* requests waiting for a handler before `busy` */
    uint64_t max_message;  /* bytes of one request, payload included */
    const char *metrics;   /* --metrics-endpoint "[HOST:]PORT", or NULL: none */
    const char *http;      /* --http-endpoint "[HOST:]PORT", or NULL: no HTTP gateway */
    const char *hsds;      /* --hsds-endpoint "[HOST:]PORT", or NULL: no HSDS endpoint */
    const char *web_dir;   /* --web-dir, or NULL: looked for beside the program */
    /* The addresses the metrics, HTTP and HSDS endpoints listen on, set by main.c once each
     * has started (NULL: off), for getconfig to report without calling up into the doors. */
    const char *metrics_bound, *http_bound, *hsds_bound;
    /* Seconds without requests (but ping and getconfig) after which freed memory goes
     * back to the kernel (memory.h); 0: only at `clear`. */
    double give_back_after;
    /* Checkpoints (checkpoint.h): the folder (absolute; NULL: off), seconds between
     * periodic ones (0: none), one at exit, and how many complete ones are kept. */
    const char *checkpoint_dir;
    double checkpoint_interval;
    bool checkpoint_on_exit;
    int checkpoint_keep;
} config_t;

extern config_t config;

#endif
