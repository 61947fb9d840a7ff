/* h5ark-bench: the daemon's speed beside this machine's own limits, measured in the same
 * run. For each measure it prints one line: a key, the unit, the daemon's figure of every
 * run and the raw counterpart's figure of the same runs (tab-separated, values separated
 * by spaces). bench/run turns these lines, with the measures made from Python, into the
 * table of medians and ratios (bench/RESULTS.md).
 *
 *   ping round trip      vs  a raw ZeroMQ DEALER/ROUTER echo of the same bytes, same transport
 *   tohdf 1 GiB int64    vs  write()+fsync of the same bytes into as many files, one thread each
 *   readhdf of the files vs  pread() of the same files into fresh memory, one thread each
 *   put + get over tcp   vs  a raw ZeroMQ stream of the same bytes in 1 MiB zero-copy frames,
 *                            each side copying once, as the daemon and client do
 */
#include "h5ark_frames.h"
#include "h5ark_value.h"
#include "measure.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

static double quantile(double *v, size_t n, double q) {
    qsort(v, n, sizeof *v, cmp_double);
    size_t i = (size_t)(q * (double)(n - 1) + 0.5);
    return v[i < n ? i : n - 1];
}

static void die(const char *what) {
    fprintf(stderr, "h5ark-bench: %s\n", what);
    exit(1);
}

/* ---- talking to the daemon ---- */

/* A port the kernel has just found free, for the daemon to bind. */
static int free_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof a;
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &len) != 0)
        die("cannot find a free port");
    close(fd);
    return ntohs(a.sin_port);
}

static volatile sig_atomic_t stopping;

/* Every wait for the daemon blocks without a timeout: if it dies, say so and stop
 * rather than wait forever. */
static void daemon_exited(int sig) {
    (void)sig;
    if (stopping) return;
    static const char msg[] = "h5ark-bench: the daemon exited during the run\n";
    ssize_t ignored = write(2, msg, sizeof msg - 1);
    (void)ignored;
    _exit(1);
}

static void *ctx, *sock;
static uint64_t next_id;

/* Send {v, id, cmd, args} and wait for the reply; exits on an error reply. */
static h5ark_value *call(const char *cmd, h5ark_value *args) {
    h5ark_value *h = h5ark_value_map();
    h5ark_value_set(h, "v", h5ark_value_uint(1));
    h5ark_value_set(h, "id", h5ark_value_uint(++next_id));
    h5ark_value_set(h, "cmd", h5ark_value_str(cmd));
    if (args) h5ark_value_set(h, "args", args);
    char *data;
    size_t len;
    if (h5ark_value_encode(h, &data, &len)) die("cannot encode a request");
    h5ark_value_destroy(&h);
    if (zmq_send(sock, data, len, 0) < 0) die("send failed");
    free(data);
    h5ark_value *reply = NULL;
    for (;;) {
        zmq_msg_t msg;
        zmq_msg_init(&msg);
        if (zmq_msg_recv(&msg, sock, 0) < 0) die("receive failed");
        int more = zmq_msg_more(&msg);
        if (!reply) {
            const char *why;
            reply = h5ark_value_decode(zmq_msg_data(&msg), zmq_msg_size(&msg), &why);
        }
        zmq_msg_close(&msg);
        if (!more) break;
    }
    const h5ark_value *ok = h5ark_value_get(reply, "ok");
    if (!ok || ok->kind != H5ARK_BOOL || !ok->as.b) {
        const h5ark_value *e = h5ark_value_get(reply, "error");
        fprintf(stderr, "h5ark-bench: %s failed: %s\n", cmd,
                e ? h5ark_value_get(e, "message")->as.s.ptr : "?");
        exit(1);
    }
    return reply;
}

static h5ark_value *strs(const char *a) {
    h5ark_value *v = h5ark_value_array();
    h5ark_value_push(v, h5ark_value_str(a));
    return v;
}

/* ---- raw counterparts ---- */

static void *echo_main(void *arg) {
    void *router = arg;
    for (;;) {
        zmq_msg_t parts[3];
        int n = 0, more = 1;
        while (more && n < 3) {
            zmq_msg_init(&parts[n]);
            if (zmq_msg_recv(&parts[n], router, 0) < 0) return NULL;
            more = zmq_msg_more(&parts[n]);
            n++;
        }
        for (int i = 0; i < n; i++)
            zmq_msg_send(&parts[i], router, i + 1 < n ? ZMQ_SNDMORE : 0);
    }
}

typedef struct {
    const char *path;
    char *buf;
    uint64_t len;
    int write;
} file_job;

static void *file_main(void *arg) {
    file_job *j = arg;
    if (j->write) {
        int fd = open(j->path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd < 0) die("cannot create a raw file");
        for (uint64_t off = 0; off < j->len;) {
            ssize_t n =
                write(fd, j->buf + off, j->len - off > (1u << 30) ? (1u << 30) : j->len - off);
            if (n <= 0) die("raw write failed");
            off += (uint64_t)n;
        }
        fsync(fd);
        close(fd);
    } else {
        int fd = open(j->path, O_RDONLY);
        if (fd < 0) die("cannot open a raw file");
        j->buf = malloc(j->len ? j->len : 1);
        for (uint64_t off = 0; off < j->len;) {
            ssize_t n = pread(fd, j->buf + off, j->len - off, (off_t)off);
            if (n <= 0) die("raw read failed");
            off += (uint64_t)n;
        }
        close(fd);
        free(j->buf);
    }
    return NULL;
}

/* Write (or read) `files` files of the given sizes in parallel; returns seconds. */
static double raw_files(char **paths, uint64_t *sizes, int files, char *src, int write) {
    pthread_t t[files];
    file_job jobs[files];
    double t0 = now();
    uint64_t off = 0;
    for (int i = 0; i < files; i++) {
        jobs[i] = (file_job){paths[i], write ? src + off : NULL, sizes[i], write};
        off += sizes[i];
        pthread_create(&t[i], NULL, file_main, &jobs[i]);
    }
    for (int i = 0; i < files; i++)
        pthread_join(t[i], NULL);
    return now() - t0;
}

static void drop_file_cache_hint(void) {
    sync();
}

/* ---- put + get against a raw ZeroMQ stream ---- */

static void no_free(void *data, void *hint) {
    (void)data, (void)hint;
}

/* Send `len` bytes of src as frames of 1 MiB without copying, after `header`. */
static void send_frames(void *s, const char *header, size_t hlen, const char *src, uint64_t len) {
    zmq_send(s, header, hlen, len ? ZMQ_SNDMORE : 0);
    for (uint64_t off = 0; off < len;) {
        size_t n = len - off > H5ARK_FRAME_BYTES ? H5ARK_FRAME_BYTES : (size_t)(len - off);
        zmq_msg_t m;
        zmq_msg_init_data(&m, (void *)(src + off), n, no_free, NULL);
        off += n;
        zmq_msg_send(&m, s, off < len ? ZMQ_SNDMORE : 0);
    }
}

/* Receive one multipart message, copying the payload frames into dst (the client's one
 * copy); returns the payload bytes. */
static uint64_t recv_into(void *s, char *dst) {
    uint64_t got = 0;
    int more = 1, first = 1;
    while (more) {
        zmq_msg_t m;
        zmq_msg_init(&m);
        if (zmq_msg_recv(&m, s, 0) < 0) die("receive failed");
        more = zmq_msg_more(&m);
        if (!first && dst) memcpy(dst + got, zmq_msg_data(&m), zmq_msg_size(&m));
        if (!first) got += zmq_msg_size(&m);
        first = 0;
        zmq_msg_close(&m);
    }
    return got;
}

/* The raw peer: receives a stream message and answers with the same bytes, as the daemon
 * answers a put (ack) and a get (data). */
static void *stream_echo_main(void *arg) {
    void *router = arg;
    char *buf = NULL;
    size_t cap = 0;
    uint64_t stored = 0; /* bytes of the last put, sent back by a get */
    for (;;) {
        zmq_msg_t id;
        zmq_msg_init(&id);
        if (zmq_msg_recv(&id, router, 0) < 0) return NULL;
        uint64_t got = 0;
        int more = 1;
        char head[64];
        size_t hlen = 0;
        int first = 1;
        while (more) {
            zmq_msg_t m;
            zmq_msg_init(&m);
            zmq_msg_recv(&m, router, 0);
            more = zmq_msg_more(&m);
            size_t n = zmq_msg_size(&m);
            if (first) {
                hlen = n < sizeof head ? n : sizeof head;
                memcpy(head, zmq_msg_data(&m), hlen);
            } else {
                if (got + n > cap) {
                    cap = (got + n) * 2;
                    buf = realloc(buf, cap);
                }
                memcpy(buf + got, zmq_msg_data(&m), n); /* the daemon's one copy into shards */
                got += n;
            }
            first = 0;
            zmq_msg_close(&m);
        }
        zmq_msg_send(&id, router, ZMQ_SNDMORE);
        if (head[0] == 'g') { /* "get": the data back */
            send_frames(router, "r", 1, buf, stored);
        } else { /* "put": an ack */
            stored = got;
            zmq_send(router, "a", 1, 0);
        }
    }
}

/* A raw ROUTER on tcp loopback served by `peer` on a thread of its own (it runs until the
 * process exits), and a DEALER connected to it: the raw side of a measure. */
static void *start_raw_peer(void *(*peer)(void *)) {
    /* its own context, as the daemon is another process with its own: the peer's I/O thread
     * is not the client's */
    void *router = zmq_socket(zmq_ctx_new(), ZMQ_ROUTER);
    char endpoint[256];
    size_t len = sizeof endpoint;
    if (zmq_bind(router, "tcp://127.0.0.1:*") != 0 ||
        zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, endpoint, &len) != 0)
        die("cannot bind a raw peer's socket");
    pthread_t t;
    pthread_create(&t, NULL, peer, router);
    void *dealer = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(dealer, ZMQ_LINGER, &linger, sizeof linger);
    zmq_connect(dealer, endpoint);
    return dealer;
}

/* ---- reporting ---- */

static void print_values(const double *v, int runs) {
    for (int i = 0; i < runs; i++)
        printf("%s%.6g", i ? " " : "", v[i]);
}

/* One measure's line: the statistics are left to bench/run, so they live in one place. */
static void samples(const char *key, const char *unit, const double *mine, const double *raw,
                    int runs) {
    printf("%s\t%s\t", key, unit);
    print_values(mine, runs);
    printf("\t");
    print_values(raw, runs);
    printf("\n");
    fflush(stdout);
}

int main(int argc, char **argv) {
    const char *daemon = "build/server/h5arkd";
    const char *dir = NULL;
    uint64_t bytes = 1ULL << 30;
    int runs = 5, locales = (int)sysconf(_SC_NPROCESSORS_ONLN), pings = 5000;
    static const struct option opts[] = {
        {"daemon", required_argument, 0, 'd'},  {"dir", required_argument, 0, 'D'},
        {"bytes", required_argument, 0, 'b'},   {"runs", required_argument, 0, 'r'},
        {"locales", required_argument, 0, 'l'}, {"pings", required_argument, 0, 'p'},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 'd': daemon = optarg; break;
        case 'D': dir = optarg; break;
        case 'b': bytes = strtoull(optarg, NULL, 10); break;
        case 'r': runs = atoi(optarg); break;
        case 'l': locales = atoi(optarg); break;
        case 'p': pings = atoi(optarg); break;
        default:
            printf("usage: h5ark-bench [--daemon PATH] [--dir DIR] [--bytes N] [--runs N] "
                   "[--locales N] [--pings N]\n"
                   "prints a line a measure: key, unit, the daemon's value of each run, the raw\n"
                   "counterpart's; bench/run makes the table of medians and ratios from them\n");
            return c == 'h' ? 0 : 2;
        }
    }
    if (runs < 1 || locales < 1 || pings < 10) die("runs, locales and pings must be positive");
    char tmpl[4096];
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpl, sizeof tmpl, "%s/h5ark-bench-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    int made_dir = !dir;
    if (!dir && !(dir = mkdtemp(tmpl))) die("cannot make a temporary directory");
    char data_dir[4096], endpoint[4200];
    snprintf(data_dir, sizeof data_dir, "%s/data", dir);
    mkdir(data_dir, 0755);

    /* the daemon, on a free tcp loopback port */
    snprintf(endpoint, sizeof endpoint, "tcp://127.0.0.1:%d", free_port());
    char loc[16];
    snprintf(loc, sizeof loc, "%d", locales);
    signal(SIGCHLD, daemon_exited);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(2, 1); /* the daemon's banner must not mix with the samples */
        execl(daemon, daemon, "--endpoint", endpoint, "--data-dir", data_dir, "--locales", loc,
              "--log-level", "warn", (char *)NULL);
        perror("exec h5arkd");
        _exit(127);
    }
    ctx = zmq_ctx_new();
    sock = zmq_socket(ctx, ZMQ_DEALER);
    int linger = 0;
    zmq_setsockopt(sock, ZMQ_LINGER, &linger, sizeof linger);
    zmq_connect(sock, endpoint);
    h5ark_value_destroy((h5ark_value *[]){call("ping", NULL)}); /* waits until it is up */

    printf("# h5ark-bench: %d locales, %d runs, %llu bytes, %d pings a run, %s\n", locales, runs,
           (unsigned long long)bytes, pings, dir);
    printf("# key\tunit\th5ark, one value a run\traw, the same runs\n");

    /* ping: latency of the daemon vs a raw echo over the same transport, alternating; each
     * run's median and p99 are one sample */
    {
        void *raw = start_raw_peer(echo_main);
        double *lat = malloc(sizeof(double) * (size_t)pings),
               *rlat = malloc(sizeof(double) * (size_t)pings);
        double med[runs], p99[runs], rmed[runs], rp99[runs];
        char req[64];
        size_t req_len = 0;
        {
            h5ark_value *h = h5ark_value_map();
            h5ark_value_set(h, "v", h5ark_value_uint(1));
            h5ark_value_set(h, "id", h5ark_value_uint(1));
            h5ark_value_set(h, "cmd", h5ark_value_str("ping"));
            char *d;
            h5ark_value_encode(h, &d, &req_len);
            memcpy(req, d, req_len);
            free(d);
            h5ark_value_destroy(&h);
        }
        char buf[256];
        for (int r = 0; r < runs; r++) {
            for (int i = 0; i < pings; i++) {
                double t0 = now();
                zmq_send(sock, req, req_len, 0);
                zmq_recv(sock, buf, sizeof buf, 0);
                lat[i] = (now() - t0) * 1e6;
                t0 = now();
                zmq_send(raw, req, req_len, 0);
                zmq_recv(raw, buf, sizeof buf, 0);
                rlat[i] = (now() - t0) * 1e6;
            }
            med[r] = quantile(lat, (size_t)pings, 0.5);
            p99[r] = quantile(lat, (size_t)pings, 0.99);
            rmed[r] = quantile(rlat, (size_t)pings, 0.5);
            rp99[r] = quantile(rlat, (size_t)pings, 0.99);
        }
        samples("ping_median", "us", med, rmed, runs);
        samples("ping_p99", "us", p99, rp99, runs);
        free(lat);
        free(rlat);
        zmq_close(raw);
        /* the echo thread stays blocked in recv; the process exits at the end */
    }

    /* tohdf / readhdf of an int64 array against raw write / pread of the same files */
    uint64_t n = bytes / 8;
    {
        h5ark_value *a = h5ark_value_map();
        h5ark_value_set(a, "dtype", h5ark_value_str("int64"));
        h5ark_value_set(a, "fill", h5ark_value_str("arange"));
        h5ark_value_set(a, "stop", h5ark_value_uint(n));
        h5ark_value_set(a, "name", h5ark_value_str("bench"));
        h5ark_value *r = call("create", a);
        h5ark_value_destroy(&r);
    }
    double *w = calloc((size_t)runs, sizeof *w), *rw = calloc((size_t)runs, sizeof *rw);
    double *rd = calloc((size_t)runs, sizeof *rd), *rrd = calloc((size_t)runs, sizeof *rrd);
    char **files = calloc((size_t)locales, sizeof *files),
         **raw_files_names = calloc((size_t)locales, sizeof *files);
    uint64_t *sizes = calloc((size_t)locales, sizeof *sizes);
    char *src = malloc(bytes);
    for (uint64_t i = 0; i < n; i++)
        ((int64_t *)src)[i] = (int64_t)i;
    for (int b = 0; b < locales; b++) {
        files[b] = malloc(4200);
        raw_files_names[b] = malloc(4200);
        snprintf(files[b], 4200, "%s/bench_LOCALE%04d.h5", data_dir, b);
        snprintf(raw_files_names[b], 4200, "%s/raw_%04d.bin", dir, b);
        uint64_t s = (n * (uint64_t)b + (uint64_t)locales - 1) / (uint64_t)locales;
        uint64_t e = (n * (uint64_t)(b + 1) + (uint64_t)locales - 1) / (uint64_t)locales;
        sizes[b] = (e - s) * 8;
    }
    double gb = (double)bytes / 1e9;
    for (int r = 0; r < runs; r++) {
        drop_file_cache_hint();
        double t0 = now();
        h5ark_value *a = h5ark_value_map();
        h5ark_value_set(a, "names", strs("bench"));
        h5ark_value_set(a, "path", h5ark_value_str("bench.h5"));
        h5ark_value *rep = call("tohdf", a);
        h5ark_value_destroy(&rep);
        w[r] = gb / (now() - t0);
        drop_file_cache_hint();
        rw[r] = gb / raw_files(raw_files_names, sizes, locales, src, 1);

        t0 = now();
        a = h5ark_value_map();
        h5ark_value_set(a, "paths", strs("bench_LOCALE*.h5"));
        rep = call("readhdf", a);
        rd[r] = gb / (now() - t0);
        const h5ark_value *objs = h5ark_value_get(h5ark_value_get(rep, "result"), "objects");
        const h5ark_value *desc = h5ark_value_get(objs, "bench");
        h5ark_value *del = h5ark_value_map();
        h5ark_value_set(del, "names", strs(h5ark_value_get(desc, "name")->as.s.ptr));
        h5ark_value_destroy(&rep);
        rep = call("delete", del);
        h5ark_value_destroy(&rep);
        rrd[r] = gb / raw_files(raw_files_names, sizes, locales, NULL, 0);
    }
    samples("tohdf", "GB/s", w, rw, runs);
    samples("readhdf", "GB/s", rd, rrd, runs);

    /* put + get of the same bytes over tcp, against a raw stream of 1 MiB frames */
    {
        void *raw = start_raw_peer(stream_echo_main);
        char *buf = malloc(bytes), *back = malloc(bytes);
        memset(buf, 7, bytes);
        memset(back, 0, bytes);
        double *pg = calloc((size_t)runs, sizeof *pg), *rpg = calloc((size_t)runs, sizeof *rpg);
        for (int r = 0; r < runs; r++) {
            /* h5ark: put then get */
            h5ark_value *h = h5ark_value_map();
            h5ark_value_set(h, "v", h5ark_value_uint(1));
            h5ark_value_set(h, "cmd", h5ark_value_str("put"));
            h5ark_value *a = h5ark_value_map();
            h5ark_value_set(a, "dtype", h5ark_value_str("uint8"));
            h5ark_value *shape = h5ark_value_array();
            h5ark_value_push(shape, h5ark_value_uint(bytes));
            h5ark_value_set(a, "shape", shape);
            h5ark_value_set(a, "name", h5ark_value_str("pg"));
            h5ark_value_set(h, "args", a);
            h5ark_value *bl = h5ark_value_array(), *b = h5ark_value_map();
            h5ark_value_set(b, "name", h5ark_value_str("values"));
            h5ark_value_set(b, "nbytes", h5ark_value_uint(bytes));
            h5ark_value_push(bl, b);
            h5ark_value_set(h, "buffers", bl);
            char *hdr;
            size_t hlen;
            h5ark_value_encode(h, &hdr, &hlen);
            h5ark_value_destroy(&h);
            double t0 = now();
            send_frames(sock, hdr, hlen, buf, bytes);
            recv_into(sock, NULL);
            free(hdr);
            h5ark_value *ga = h5ark_value_map();
            h5ark_value_set(ga, "name", h5ark_value_str("pg"));
            h = h5ark_value_map();
            h5ark_value_set(h, "v", h5ark_value_uint(1));
            h5ark_value_set(h, "cmd", h5ark_value_str("get"));
            h5ark_value_set(h, "args", ga);
            h5ark_value_encode(h, &hdr, &hlen);
            h5ark_value_destroy(&h);
            zmq_send(sock, hdr, hlen, 0);
            free(hdr);
            if (recv_into(sock, back) != bytes) die("get returned the wrong size");
            pg[r] = 2 * gb / (now() - t0);
            h5ark_value *del = h5ark_value_map();
            h5ark_value_set(del, "names", strs("pg"));
            h5ark_value_destroy((h5ark_value *[]){call("delete", del)});
            /* raw: the same bytes there and back */
            t0 = now();
            send_frames(raw, "p", 1, buf, bytes);
            recv_into(raw, NULL);
            zmq_send(raw, "g", 1, 0);
            if (recv_into(raw, back) != bytes) die("the raw peer returned the wrong size");
            rpg[r] = 2 * gb / (now() - t0);
        }
        samples("putget", "GB/s", pg, rpg, runs);
        free(buf);
        free(back);
        zmq_close(raw);
    }

    stopping = 1;
    h5ark_value_destroy((h5ark_value *[]){call("shutdown", NULL)});
    int status;
    waitpid(pid, &status, 0);
    for (int b = 0; b < locales; b++) {
        unlink(files[b]);
        unlink(raw_files_names[b]);
    }
    if (made_dir) { /* what the daemon left besides the files: nothing, if all went well */
        rmdir(data_dir);
        rmdir(dir);
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
