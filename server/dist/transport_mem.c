/* Ranks as threads of one process, messages in memory (transport.h, ranks_threads_run).
 *
 * A send is copied at once into its destination's queue, in order; a receive takes the
 * first message from its peer on its tag, receives posted earlier first. A message of
 * another length than the receive expects is an error here (MPI would truncate or leave
 * bytes unwritten), and so is a wait for a rank whose function has returned without
 * sending: both break the job, so a wrong collective fails its test rather than hanging. */
#include "dist/ranks.h"
#include "dist/transport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct msg {
    struct msg *next;
    int from, tag;
    uint64_t len;
    unsigned char data[];
} msg;

typedef struct {
    pthread_mutex_t lock;
    msg **head; /* per destination rank, in arrival order */
    bool *ended;
} queues;

typedef struct {
    int from;
    bool done;
    void *buf;
    uint64_t n;
} recv_op;

static queues *queues_of(const transport_batch *b) {
    (void)b;
    return ranks_job_here()->mem;
}

static void mem_recv(transport_batch *b, int from, void *buf, uint64_t n) {
    recv_op *op = transport_slot(b);
    if (op) *op = (recv_op){.from = from, .buf = buf, .n = n};
}

static void mem_send(transport_batch *b, int to, const h5ark_span *spans, size_t nspans) {
    uint64_t total = 0;
    for (size_t i = 0; i < nspans; i++)
        total += spans[i].len;
    msg *m = malloc(sizeof *m + total);
    if (!m) {
        b->failed = true;
        return;
    }
    *m = (msg){.from = ranks_self(), .tag = b->tag, .len = total};
    uint64_t off = 0;
    for (size_t i = 0; i < nspans; i++) {
        if (spans[i].len) memcpy(m->data + off, spans[i].ptr, spans[i].len);
        off += spans[i].len;
    }
    queues *q = queues_of(b);
    pthread_mutex_lock(&q->lock);
    msg **tail = &q->head[to];
    while (*tail)
        tail = &(*tail)->next;
    *tail = m;
    pthread_mutex_unlock(&q->lock);
}

static int mem_test(transport_batch *b, int *done, char *why, size_t nwhy) {
    queues *q = queues_of(b);
    int rc = 0;
    *done = 0;
    pthread_mutex_lock(&q->lock);
    for (int i = 0; i < b->n && rc == 0; i++) {
        recv_op *op = (recv_op *)(b->ops + (size_t)i * sizeof *op);
        if (op->done) continue;
        msg **at = &q->head[ranks_self()];
        while (*at && ((*at)->from != op->from || (*at)->tag != b->tag))
            at = &(*at)->next;
        msg *m = *at;
        if (!m) {
            if (q->ended[op->from]) {
                snprintf(why, nwhy, "rank %d ended without sending what this rank waits for",
                         op->from);
                rc = -1;
            }
            continue;
        }
        if (m->len != op->n) {
            snprintf(why, nwhy, "rank %d sent %llu bytes where %llu were expected", op->from,
                     (unsigned long long)m->len, (unsigned long long)op->n);
            rc = -1;
            continue;
        }
        *at = m->next;
        if (m->len) memcpy(op->buf, m->data, m->len);
        free(m);
        op->done = true;
        ++*done;
    }
    pthread_mutex_unlock(&q->lock);
    return rc;
}

const transport transport_mem = {.name = "memory",
                                 .op_size = sizeof(recv_op),
                                 .recv = mem_recv,
                                 .send = mem_send,
                                 .test = mem_test};

typedef struct {
    ranks_job *job;
    int rank;
    void (*fn)(int rank, void *ctx);
    void *ctx;
} rank_start;

static void *run_rank(void *arg) {
    rank_start *s = arg;
    ranks_threads_adopt((ranks_thread_place){s->job, s->rank});
    s->fn(s->rank, s->ctx);
    queues *q = s->job->mem;
    pthread_mutex_lock(&q->lock);
    q->ended[s->rank] = true;
    pthread_mutex_unlock(&q->lock);
    ranks_threads_adopt((ranks_thread_place){NULL, 0});
    return NULL;
}

int ranks_threads_run(int count, int wait_seconds, void (*fn)(int rank, void *ctx), void *ctx) {
    if (count < 1) return -1;
    ranks_job job = {.count = count,
                     .t = count > 1 ? &transport_mem : NULL,
                     .tag_ub = 1 << 30,
                     .wait_limit_ns = (int64_t)wait_seconds * 1000000000};
    queues q = {.head = calloc((size_t)count, sizeof *q.head),
                .ended = calloc((size_t)count, sizeof *q.ended)};
    rank_start *starts = calloc((size_t)count, sizeof *starts);
    pthread_t *threads = calloc((size_t)count, sizeof *threads);
    int started = 0, left = -1;
    if (q.head && q.ended && starts && threads) {
        pthread_mutex_init(&job.lock, NULL);
        pthread_mutex_init(&q.lock, NULL);
        job.mem = &q;
        for (; started < count; started++) {
            starts[started] = (rank_start){&job, started, fn, ctx};
            if (pthread_create(&threads[started], NULL, run_rank, &starts[started]) != 0) break;
        }
        if (started < count) /* the ones started must not wait for the others */
            ranks_job_break(&job, "rank %d could not start", started);
        for (int i = 0; i < started; i++)
            pthread_join(threads[i], NULL);
        left = started < count ? -1 : 0;
        for (int r = 0; r < count; r++)
            for (msg *m = q.head[r], *next; m; m = next) {
                next = m->next;
                free(m);
                if (left >= 0) left++;
            }
        pthread_mutex_destroy(&q.lock);
        pthread_mutex_destroy(&job.lock);
    }
    free(q.head);
    free(q.ended);
    free(starts);
    free(threads);
    return left;
}
