/* h5arkd: command line, configuration, signals, start and stop. */
#include "checkpoint.h"
#include "config.h"
#include "dispatch.h"
#include "front/gateway.h"
#include "front/hsds.h"
#include "h5ark_version.h"
#include "locales.h"
#include "front/http.h"
#include "log.h"
#include "memlimit.h"
#include "memory.h"
#include "metrics.h"
#include "dist/ranks.h"
#include "dist/ranks_serve.h"
#include "registry.h"
#include "front/router.h"
#include "shardcache.h"
#include "storage/commit.h"
#include "storage/files.h"
#include "storage/storage.h"
#include "storage/sandbox.h"
#include "sysio.h"
#include "users.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <hdf5.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <ucontext.h>
#include <unistd.h>
#include <zmq.h>

config_t config;

#define DEFAULT_ENDPOINT "tcp://127.0.0.1:5555"
#define DEFAULT_DATA_DIR "./data"
/* After a release, the next request faults its memory in afresh, about 0.6 s a GiB here
 * (docs/DESIGN.md, "Memory"); a client that works between its requests for less than this
 * never pays that, and one that works longer pays at most that against its own pause. */
#define DEFAULT_IDLE_RELEASE 5.0

/* An HTTP endpoint option's [HOST:]PORT, checked now so a typo stops the start. */
static int check_http_address(const char *option, const char *arg) {
    char host[256], port[8];
    h5ark_error e;
    if (http_parse_address(arg, "127.0.0.1", host, sizeof host, port, sizeof port, &e) == 0)
        return 0;
    fprintf(stderr, "h5arkd: %s %s\n", option, e.message);
    return -1;
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: h5arkd [options]\n"
            "Serve arrays and Arkouda-format HDF5 files over ZeroMQ + MessagePack.\n\n"
            "  --endpoint URL       ZeroMQ endpoint to bind (default %s; ipc:// works too)\n"
            "  --arkouda-endpoint URL  also serve Arkouda's own client (its JSON dialect) on\n"
            "                       this ZeroMQ endpoint (default: off; at several ranks\n"
            "                       rank 0 serves it, as it does --endpoint)\n"
            "  --locales N          locale worker threads (default: one per online CPU, %ld;\n"
            "                       at several ranks every rank runs rank 0's number)\n"
            "  --data-dir DIR       directory all file paths are relative to, created if\n"
            "                       missing (default %s)\n"
            "  --max-memory BYTES   memory for objects; suffixes K M G T (default: half the\n"
            "                       machine's memory, or of the cgroup memory limit (a\n"
            "                       container's) when that is smaller)\n"
            "  --shard-cache BYTES  freed array memory kept for new arrays, whose pages are\n"
            "                       then already touched; it gives way to objects within\n"
            "                       --max-memory (default: a quarter of it; 0: none)\n"
            "  --token-file FILE    require every request to carry one of the tokens in FILE,\n"
            "                       one per line: TOKEN [read|write|admin] [user=NAME\n"
            "                       groups=A,B quota.KEY=N ...] (default role write; default:\n"
            "                       no authentication; SIGHUP or `reload` re-reads it)\n"
            "  --curve-secret-file FILE  encrypt with ZeroMQ CURVE using the server secret key\n"
            "                       in FILE (clients need the matching public key)\n"
            "  --curve-keygen PREFIX  write a new key pair to PREFIX.key and PREFIX.pub, exit\n"
            "  --handlers N         request handler threads (default 8)\n"
            "  --max-queue N        requests waiting for a handler before `busy` (default 1024)\n"
            "  --max-message BYTES  largest request accepted, payload included (default: the\n"
            "                       memory limit)\n"
            "  --metrics-endpoint [HOST:]PORT  serve Prometheus metrics at GET /metrics on\n"
            "                       this address (HOST default 127.0.0.1; default: off)\n"
            "  --http-endpoint [HOST:]PORT  serve the data directory read-only over HTTP:\n"
            "                       h5grove's API and the viewer page at / (default: off)\n"
            "  --hsds-endpoint [HOST:]PORT  serve the data directory's HDF5 files over HSDS's\n"
            "                       REST API, for h5pyd and h5web (default: off)\n"
            "  --web-dir DIR        the built viewer page to serve (default: `web` beside\n"
            "                       h5arkd, or ../share/h5ark/web from it)\n"
            "  --idle-release SECONDS  after this long without requests, give cached and\n"
            "                       freed memory back to the system (default %g; 0: only at\n"
            "                       `clear`)\n"
            "  --checkpoint-dir DIR  keep checkpoints of every object in DIR (made if missing)\n"
            "                       and restore the newest at start (default: off)\n"
            "  --checkpoint-interval SECONDS  write one this often when objects changed\n"
            "                       (default 0: only on request)\n"
            "  --checkpoint-on-exit write one at SIGTERM or `shutdown` before exiting\n"
            "  --checkpoint-keep N  complete checkpoints kept (default 2)\n"
            "  --log-level LEVEL    error, warn, notice, info or debug (default notice: the\n"
            "                       daemon's own events; info adds a line per request)\n"
            "  --version            print the version\n"
            "  --help               this text\n",
            DEFAULT_ENDPOINT, sysconf(_SC_NPROCESSORS_ONLN), DEFAULT_DATA_DIR,
            DEFAULT_IDLE_RELEASE);
}

/* Seconds, decimals allowed, from 0 to a day; -1 when malformed. */
static int parse_seconds(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s || !isfinite(v) || v < 0 || v > 86400) return -1;
    *out = v;
    return 0;
}

static int parse_int(const char *s, long lo, long hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

/* The first line of a key file, which must be a 40-character Z85 key. */
static int read_key(const char *path, char key[41]) {
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "h5arkd: cannot read key file %s: %s\n", path, strerror(errno));
        return -1;
    }
    char line[128] = "";
    char *got = fgets(line, sizeof line, f);
    fclose(f);
    size_t n = got ? strcspn(line, "\r\n") : 0;
    uint8_t raw[32];
    line[n] = '\0';
    if (n != 40 || !zmq_z85_decode(raw, line)) {
        fprintf(stderr, "h5arkd: %s does not hold a 40-character Z85 CURVE key\n", path);
        return -1;
    }
    memcpy(key, line, 41);
    return 0;
}

/* --curve-keygen PREFIX: PREFIX.key (secret, mode 0600) and PREFIX.pub. */
static int curve_keygen(const char *prefix) {
    char pub[41], sec[41], path[PATH_MAX];
    if (zmq_curve_keypair(pub, sec) != 0) {
        fprintf(stderr, "h5arkd: this libzmq cannot make CURVE keys: %s\n", zmq_strerror(errno));
        return 1;
    }
    const char *what[2][2] = {{".key", sec}, {".pub", pub}};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s%s", prefix, what[i][0]);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, i == 0 ? 0600 : 0644);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!f || fprintf(f, "%s\n", what[i][1]) < 0 || fclose(f) != 0) {
            fprintf(stderr, "h5arkd: cannot write %s: %s\n", path, strerror(errno));
            return 1;
        }
    }
    printf("wrote %s.key (secret: give it to --curve-secret-file) and %s.pub (public: give it "
           "to clients): %s\n",
           prefix, prefix, pub);
    return 0;
}

static int make_dirs(const char *path) {
    char buf[PATH_MAX];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) return -1;
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    if (mkdir(buf, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

static int configure(int argc, char **argv) {
    enum {
        O_ENDPOINT = 1,
        O_LOCALES,
        O_DATA,
        O_MEM,
        O_CACHE,
        O_TOKEN,
        O_HANDLERS,
        O_QUEUE,
        O_MSG,
        O_LOG,
        O_HELP,
        O_CURVE,
        O_KEYGEN,
        O_METRICS,
        O_ARKOUDA,
        O_VERSION,
        O_IDLE,
        O_HTTP,
        O_WEB,
        O_CKPT_DIR,
        O_CKPT_INT,
        O_CKPT_EXIT,
        O_CKPT_KEEP,
        O_HSDS
    };
    static const struct option opts[] = {{"endpoint", required_argument, 0, O_ENDPOINT},
                                         {"locales", required_argument, 0, O_LOCALES},
                                         {"data-dir", required_argument, 0, O_DATA},
                                         {"max-memory", required_argument, 0, O_MEM},
                                         {"shard-cache", required_argument, 0, O_CACHE},
                                         {"token-file", required_argument, 0, O_TOKEN},
                                         {"handlers", required_argument, 0, O_HANDLERS},
                                         {"max-queue", required_argument, 0, O_QUEUE},
                                         {"max-message", required_argument, 0, O_MSG},
                                         {"log-level", required_argument, 0, O_LOG},
                                         {"metrics-endpoint", required_argument, 0, O_METRICS},
                                         {"arkouda-endpoint", required_argument, 0, O_ARKOUDA},
                                         {"idle-release", required_argument, 0, O_IDLE},
                                         {"http-endpoint", required_argument, 0, O_HTTP},
                                         {"web-dir", required_argument, 0, O_WEB},
                                         {"checkpoint-dir", required_argument, 0, O_CKPT_DIR},
                                         {"checkpoint-interval", required_argument, 0, O_CKPT_INT},
                                         {"checkpoint-on-exit", no_argument, 0, O_CKPT_EXIT},
                                         {"checkpoint-keep", required_argument, 0, O_CKPT_KEEP},
                                         {"hsds-endpoint", required_argument, 0, O_HSDS},
                                         {"curve-secret-file", required_argument, 0, O_CURVE},
                                         {"curve-keygen", required_argument, 0, O_KEYGEN},
                                         {"version", no_argument, 0, O_VERSION},
                                         {"help", no_argument, 0, O_HELP},
                                         {0, 0, 0, 0}};
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    snprintf(config.endpoint, sizeof config.endpoint, "%s", DEFAULT_ENDPOINT);
    config.locales = cpus > 0 ? (int)cpus : 1;
    /* The default honours a cgroup (container) limit: past it the kernel kills the daemon
     * before --max-memory would refuse anything. */
    const char *cgroup_root = getenv(MEMLIMIT_ROOT_ENV);
    uint64_t phys = pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
    uint64_t cgroup_limit = memlimit_cgroup(cgroup_root ? cgroup_root : "");
    config.max_memory = memlimit_default(phys, cgroup_limit);
    bool max_memory_set = false;
    config.handlers = 8;
    config.max_queue = 1024;
    config.give_back_after = DEFAULT_IDLE_RELEASE;
    config.checkpoint_keep = 2;
    const char *data_dir = DEFAULT_DATA_DIR, *token_file = NULL, *curve_file = NULL;
    bool max_message_set = false, shard_cache_set = false;
    int c, q;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_ENDPOINT:
            if (snprintf(config.endpoint, sizeof config.endpoint, "%s", optarg) >=
                (int)sizeof config.endpoint) {
                fprintf(stderr, "h5arkd: --endpoint is too long\n");
                return -1;
            }
            break;
        case O_ARKOUDA:
            if (!*optarg || snprintf(config.arkouda_endpoint, sizeof config.arkouda_endpoint, "%s",
                                     optarg) >= (int)sizeof config.arkouda_endpoint) {
                fprintf(stderr, "h5arkd: --arkouda-endpoint needs an endpoint of under 1024 "
                                "characters\n");
                return -1;
            }
            break;
        case O_LOCALES:
            if (parse_int(optarg, 1, 1024, &config.locales)) {
                fprintf(stderr, "h5arkd: --locales must be a whole number from 1 to 1024\n");
                return -1;
            }
            break;
        case O_DATA: data_dir = optarg; break;
        case O_MEM:
            if (memlimit_parse_bytes(optarg, &config.max_memory) || config.max_memory == 0) {
                fprintf(stderr, "h5arkd: --max-memory takes bytes, e.g. 1073741824 or 4G\n");
                return -1;
            }
            max_memory_set = true;
            break;
        case O_CACHE:
            if (memlimit_parse_bytes(optarg, &config.shard_cache)) {
                fprintf(stderr, "h5arkd: --shard-cache takes bytes, e.g. 1G, or 0 for none\n");
                return -1;
            }
            shard_cache_set = true;
            break;
        case O_TOKEN: token_file = optarg; break;
        case O_CURVE: curve_file = optarg; break;
        case O_KEYGEN: exit(curve_keygen(optarg));
        case O_HANDLERS:
            if (parse_int(optarg, 1, 256, &config.handlers)) {
                fprintf(stderr, "h5arkd: --handlers must be a whole number from 1 to 256\n");
                return -1;
            }
            break;
        case O_QUEUE:
            if (parse_int(optarg, 1, 1 << 20, &q)) {
                fprintf(stderr, "h5arkd: --max-queue must be a whole number from 1 to 1048576\n");
                return -1;
            }
            config.max_queue = (size_t)q;
            break;
        case O_MSG:
            if (memlimit_parse_bytes(optarg, &config.max_message) || config.max_message == 0) {
                fprintf(stderr, "h5arkd: --max-message takes bytes, e.g. 64M\n");
                return -1;
            }
            max_message_set = true;
            break;
        case O_IDLE:
            if (parse_seconds(optarg, &config.give_back_after)) {
                fprintf(stderr, "h5arkd: --idle-release takes seconds from 0 to 86400, e.g. 2 "
                                "or 0.5\n");
                return -1;
            }
            break;
        case O_LOG:
            if (log_level_from_name(optarg, &log_threshold)) {
                fprintf(stderr, "h5arkd: --log-level is one of error, warn, notice, info, debug\n");
                return -1;
            }
            break;
        case O_METRICS:
            if (check_http_address("--metrics-endpoint", optarg)) return -1;
            config.metrics = optarg;
            break;
        case O_HTTP:
            if (check_http_address("--http-endpoint", optarg)) return -1;
            config.http = optarg;
            break;
        case O_WEB: config.web_dir = optarg; break;
        case O_CKPT_DIR: config.checkpoint_dir = optarg; break;
        case O_CKPT_INT:
            if (parse_seconds(optarg, &config.checkpoint_interval)) {
                fprintf(stderr, "h5arkd: --checkpoint-interval takes seconds from 0 to 86400\n");
                return -1;
            }
            break;
        case O_CKPT_EXIT: config.checkpoint_on_exit = true; break;
        case O_CKPT_KEEP:
            if (parse_int(optarg, 1, 1000000, &config.checkpoint_keep)) {
                fprintf(stderr, "h5arkd: --checkpoint-keep must be a whole number from 1\n");
                return -1;
            }
            break;
        case O_HSDS:
            if (check_http_address("--hsds-endpoint", optarg)) return -1;
            config.hsds = optarg;
            break;
        case O_HELP:
        case 'h': usage(stdout); exit(0);
        case O_VERSION: printf("h5arkd %s\n", H5ARK_VERSION_STRING); exit(0);
        default: usage(stderr); return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "h5arkd: unexpected argument '%s'\n", argv[optind]);
        usage(stderr);
        return -1;
    }
    if (config.max_memory == 0) {
        fprintf(stderr, "h5arkd: cannot tell the machine's memory: give --max-memory\n");
        return -1;
    }
    if (!max_memory_set && cgroup_limit && cgroup_limit < phys)
        log_info("default --max-memory: %llu bytes, half the cgroup memory limit of %llu bytes "
                 "(the machine has %llu)",
                 (unsigned long long)config.max_memory, (unsigned long long)cgroup_limit,
                 (unsigned long long)phys);
    if (!max_message_set) config.max_message = config.max_memory;
    if (!shard_cache_set) config.shard_cache = config.max_memory / 4;
    if (config.shard_cache > config.max_memory) {
        fprintf(stderr, "h5arkd: --shard-cache must not exceed --max-memory (%llu bytes)\n",
                (unsigned long long)config.max_memory);
        return -1;
    }
    if (make_dirs(data_dir) != 0 || !realpath(data_dir, config.data_dir)) {
        fprintf(stderr, "h5arkd: cannot create data directory %s: %s\n", data_dir, strerror(errno));
        return -1;
    }
    /* only rank 0 serves clients: the other ranks' hosts need not hold these files */
    if (token_file && ranks_self() == 0) {
        /* ranks > 0 keep no table: rank 0 forwards each request's caller with it */
        char why[1024];
        if (users_reload(token_file, config.data_dir, why, sizeof why)) {
            fprintf(stderr, "h5arkd: %s\n", why);
            return -1;
        }
        config.token_file = token_file;
    }
    if (checkpoint_configure() != 0) return -1;
    if (curve_file && ranks_self() == 0 && read_key(curve_file, config.curve_secret)) return -1;
    return 0;
}

/* A stop signal taken by a thread that does not block it (a library's thread that unblocked
 * every signal): keep it blocked in that thread from now on and send it again, to the
 * process, so that the router's signalfd reads it. */
static void stop_signal_redirect(int sig, siginfo_t *info, void *context) {
    (void)info;
    int saved = errno;
    sigaddset(&((ucontext_t *)context)->uc_sigmask, sig);
    kill(getpid(), sig);
    errno = saved;
}

/* SIGINT and SIGTERM stop the daemon and SIGHUP re-reads --token-file, whatever it
 * inherited. The router reads them through a signalfd, so they are blocked in every thread
 * (the MPI library's too: ranks_init starts them) whether or not they came blocked; and a
 * handler of our own replaces an inherited disposition, since a shell starts a background
 * job with SIGINT ignored (nohup, SIGHUP) and POSIX lets a signal that is ignored be
 * discarded even while it is blocked. */
static void stop_signals_setup(void) {
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGHUP); /* re-reads --token-file (the router reads it too) */
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    struct sigaction sa = {.sa_sigaction = stop_signal_redirect, .sa_flags = SA_SIGINFO};
    sa.sa_mask = sigs;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
}

/* What the metrics count requests under: the command table's names and the HTTP doors'
 * routes, which are named as commands are. */
static const char *const *request_names(void) {
    static const char *names[METRICS_NAMES + 1];
    size_t n = 0;
    for (size_t i = 0; dispatch_command_name(i) && n < METRICS_NAMES; i++)
        names[n++] = dispatch_command_name(i);
    const char *const *const routes[] = {gateway_route_names, hsds_route_names};
    for (size_t r = 0; r < sizeof routes / sizeof *routes; r++)
        for (size_t i = 0; routes[r][i] && n < METRICS_NAMES; i++)
            names[n++] = routes[r][i];
    names[n] = NULL;
    return names;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], SANDBOX_PROBE_ARG) == 0) {
        registry_init(SANDBOX_PROBE_MEMORY);
        return storage_init() < 0 ? 1 : sandbox_probe_main(argv[2]);
    }
    stop_signals_setup();
    signal(SIGPIPE, SIG_IGN);
    if (ranks_init(&argc, &argv) != 0) return 1;
    if (configure(argc, argv) != 0) {
        if (ranks_count() > 1) ranks_abort(2);
        return 2;
    }
    if (ranks_count() > 1) {
        /* every rank runs rank 0's number of locales: the distribution is R x T */
        log_rank = ranks_self();
        ranks_startup_bcast(&config.locales, sizeof config.locales);
    }
    const char *faults = getenv(SYSIO_FAULTS_ENV);
    if (faults && strcmp(faults, "1") == 0) {
        if (sysio_faults_start(-1) != 0) {
            fprintf(stderr, "h5arkd: cannot set up fault injection\n");
            return 1;
        }
        log_warn("%s=1: fault injection is on (for tests only)", SYSIO_FAULTS_ENV);
    }

    memory_tune(); /* before any thread: it sets how many heaps malloc makes */

    if (storage_init() < 0) {
        fprintf(stderr, "h5arkd: the HDF5 library failed to initialise\n");
        return 1;
    }
    registry_init(config.max_memory);
    shardcache_init(config.shard_cache);
    sandbox_start();
    /* a file set whose commit a stop cut short is completed first: its temporaries are
     * part of it, not stale */
    h5ark_error rerr = {0};
    if (ranks_self() == 0 && commit_recover(&rerr) != 0) {
        fprintf(stderr, "h5arkd: %s\n", rerr.message);
        if (ranks_count() > 1) ranks_abort(1);
        return 1;
    }
    size_t stale = ranks_self() == 0 ? files_remove_stale_temps() : 0;
    if (stale)
        log_warn("removed %zu temporary file(s) left by a daemon that stopped mid-write", stale);
    if (locales_start(config.locales, ranks_self(), ranks_count()) != 0) {
        fprintf(stderr, "h5arkd: cannot start %d locale threads\n", config.locales);
        return 1;
    }
    if (memory_housekeeper_start() != 0)
        log_warn("cannot start the housekeeping thread: idle memory is released by the router");
    h5ark_error err = {0};
    void *zctx = zmq_ctx_new();
    /* the metrics endpoint is rank 0's, as the request endpoint is */
    int rc = ranks_self() == 0 ? metrics_start(config.metrics, request_names(), &err) : 0;
    if (rc != 0) {
        fprintf(stderr, "h5arkd: --metrics-endpoint: %s\n", err.message);
    } else if (ranks_self() == 0 && gateway_start(config.http, config.web_dir, &err) != 0) {
        fprintf(stderr, "h5arkd: --http-endpoint: %s\n", err.message);
        rc = -1;
    } else if (ranks_self() == 0 && hsds_start(config.hsds, &err) != 0) {
        fprintf(stderr, "h5arkd: --hsds-endpoint: %s\n", err.message);
        rc = -1;
    } else {
        config.metrics_bound = metrics_address();
        config.http_bound = gateway_address();
        config.hsds_bound = hsds_address();
        rc = ranks_serve_start(zctx, dispatch_forwarded, &err);
        if (rc == 0 && ranks_count() > 1 && ranks_self() == 0)
            log_notice("%d ranks of %d locales each (%s)", ranks_count(), config.locales,
                       ranks_mpi_library());
        if (rc == 0 && ranks_self() == 0) checkpoint_start(); /* the restore, the timer */
        if (rc == 0) rc = ranks_self() == 0 ? router_run(zctx, &err) : ranks_worker_run(&err);
        if (ranks_self() == 0) checkpoint_stop(rc == 0); /* on exit: one more */
        ranks_serve_stop();
        char why[512];
        if (rc == 0 && ranks_is_broken(why, sizeof why))
            rc = h5ark_fail(&err, H5ARK_IO_ERROR, "%s", why);
        if (rc != 0 && ranks_count() > 1)
            fprintf(stderr, "h5arkd: rank %d: %s\n", ranks_self(), err.message);
        else if (rc != 0)
            fprintf(stderr, "h5arkd: %s\n", err.message);
        else
            log_notice("stopped cleanly");
    }
    hsds_stop();
    gateway_stop();
    metrics_stop();
    if (rc != 0 && ranks_count() > 1) {
        fflush(stderr);
        ranks_abort(1); /* peers may be gone: MPI_Finalize would wait for them */
    }

    zmq_ctx_term(zctx);
    memory_housekeeper_stop();
    registry_shutdown();
    shardcache_shutdown();
    sandbox_stop();
    locales_stop();
    users_install(NULL);
    H5close();
    ranks_finalize();
    return rc == 0 ? 0 : 1;
}
