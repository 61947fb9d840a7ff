/* The token file and the table of users it names (users.h, SERVICE.md §1). */
#include "users.h"

#include "config.h"
#include "log.h"
#include "memlimit.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define NAME_MAX_LEN 64
/* Tens of thousands of tokens; finding a line's user is linear in the users read. */
#define FILE_MAX_BYTES (1u << 20)

struct user_state {
    char name[NAME_MAX_LEN + 1];
    atomic_int_fast64_t in_flight;
    atomic_int metrics_slot; /* -1: not asked for yet */
    user_state *next;
};

typedef struct token_entry {
    char *secret;
    size_t len;
    caller_role role;
    size_t user; /* index in users; SIZE_MAX: the file names no users */
    int line;
} token_entry;

typedef struct user_entry {
    user u;
    char *name;
    char **groups;
    int line;         /* the first line naming it */
    bool quotas_seen; /* a line naming it has been read (its quotas are u.quota) */
} user_entry;

struct users_table {
    atomic_int refs;
    token_entry *tokens;
    size_t ntokens;
    user_entry *users;
    size_t nusers;
    char **groups; /* sorted, each once */
    size_t ngroups;
};

static const char *const role_names[] = {"read", "write", "admin"};

const char *users_role_name(caller_role role) {
    return role >= ROLE_READ && role <= ROLE_ADMIN ? role_names[role] : "?";
}

int users_role_from_name(const char *name, caller_role *out) {
    for (int r = ROLE_READ; r <= ROLE_ADMIN; r++)
        if (strcmp(name, role_names[r]) == 0) return *out = (caller_role)r, 0;
    return -1;
}

/* ---- the states that outlive tables: one per user name ever named ---- */

static pthread_mutex_t states_lock = PTHREAD_MUTEX_INITIALIZER;
static user_state *states;

static user_state *state_of(const char *name) {
    pthread_mutex_lock(&states_lock);
    user_state *s = states;
    while (s && strcmp(s->name, name) != 0)
        s = s->next;
    if (!s && (s = calloc(1, sizeof *s))) {
        snprintf(s->name, sizeof s->name, "%s", name);
        atomic_init(&s->metrics_slot, -1);
        s->next = states;
        states = s;
    }
    pthread_mutex_unlock(&states_lock);
    return s;
}

/* ---- parsing ---- */

typedef struct parser {
    const char *source;
    char *why;
    size_t why_len;
    users_table *t;
    int first_unnamed, first_named; /* lines with and without user=; 0: none yet */
} parser;

static int refuse(parser *p, int line, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int refuse(parser *p, int line, const char *key, const char *fmt, ...) {
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (key)
        snprintf(p->why, p->why_len, "token file %s line %d, key %s: %s", p->source, line, key,
                 what);
    else if (line)
        snprintf(p->why, p->why_len, "token file %s line %d: %s", p->source, line, what);
    else
        snprintf(p->why, p->why_len, "token file %s: %s", p->source, what);
    return -1;
}

static int out_of_memory(parser *p) {
    return refuse(p, 0, NULL, "out of memory reading it");
}

/* A user or group name: [A-Za-z0-9_.-]{1,64}, and not `.` or `..` (they name folders). */
static bool name_ok(const char *s, size_t n) {
    if (n == 0 || n > NAME_MAX_LEN) return false;
    if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '.' || c == '-'))
            return false;
    }
    return true;
}

#define NAME_RULE "a name is 1 to 64 of A-Z a-z 0-9 _ . - (not . or ..)"

/* A whole number of 0 or more that fits int64. */
static int parse_count(const char *s, int64_t *out) {
    if (*s < '0' || *s > '9') return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > INT64_MAX) return -1;
    *out = (int64_t)v;
    return 0;
}

static const char *const quota_keys[] = {"quota.memory", "quota.disk", "quota.objects",
                                         "quota.requests"};

static int64_t *quota_field(user_quotas *q, int i) {
    int64_t *f[] = {&q->memory, &q->disk, &q->objects, &q->requests};
    return f[i];
}

static int parse_quota(parser *p, int line, int i, const char *value, user_quotas *q) {
    int64_t v;
    if (i < 2) {
        uint64_t bytes;
        if (memlimit_parse_bytes(value, &bytes) || bytes > INT64_MAX)
            return refuse(p, line, quota_keys[i],
                          "not a size (bytes, or a number with K, M, G or T, e.g. 4G)");
        v = (int64_t)bytes;
    } else if (parse_count(value, &v)) {
        return refuse(p, line, quota_keys[i], "not a whole number");
    } else if (i == 3 && v == 0) {
        return refuse(p, line, quota_keys[i], "must be at least 1 (0 would refuse every request)");
    }
    *quota_field(q, i) = v;
    return 0;
}

static bool strings_has(char *const *list, size_t n, const char *s) {
    for (size_t i = 0; i < n; i++)
        if (strcmp(list[i], s) == 0) return true;
    return false;
}

/* Add s (n bytes) to *list unless there. */
static int strings_add(char ***list, size_t *n, const char *s, size_t len) {
    char *copy = strndup(s, len);
    if (!copy) return -1;
    if (strings_has(*list, *n, copy)) return free(copy), 0;
    char **grown = realloc(*list, (*n + 1) * sizeof *grown);
    if (!grown) return free(copy), -1;
    *list = grown;
    (*list)[(*n)++] = copy;
    return 0;
}

/* The fields of one line, split at blanks (the line is modified). */
#define LINE_MAX_FIELDS 16

typedef struct line_fields {
    char *user, *groups;
    bool quota_set[4];
    user_quotas quota;
} line_fields;

static int parse_key(parser *p, int line, char *field, line_fields *lf) {
    char *eq = strchr(field, '=');
    if (!eq) return refuse(p, line, NULL, "expected key=value after the token and its role");
    *eq = '\0';
    const char *key = field, *value = eq + 1;
    if (!*value) return refuse(p, line, key, "has no value");
    if (strcmp(key, "user") == 0 || strcmp(key, "groups") == 0) {
        char **slot = key[0] == 'u' ? &lf->user : &lf->groups;
        if (*slot) return refuse(p, line, key, "given twice");
        *slot = eq + 1;
        return 0;
    }
    for (int i = 0; i < 4; i++)
        if (strcmp(key, quota_keys[i]) == 0) {
            if (lf->quota_set[i]) return refuse(p, line, key, "given twice");
            lf->quota_set[i] = true;
            return parse_quota(p, line, i, value, &lf->quota);
        }
    if (strlen(key) > NAME_MAX_LEN || !name_ok(key, strlen(key)))
        return refuse(p, line, NULL,
                      "unknown key (user, groups, quota.memory, quota.disk, "
                      "quota.objects or quota.requests)");
    return refuse(p, line, key,
                  "unknown key (user, groups, quota.memory, quota.disk, quota.objects or "
                  "quota.requests)");
}

/* The user a line names, made or found; its groups joined. */
static int line_user(parser *p, int line, const line_fields *lf, size_t *index) {
    users_table *t = p->t;
    if (!name_ok(lf->user, strlen(lf->user))) return refuse(p, line, "user", NAME_RULE);
    size_t i = 0;
    while (i < t->nusers && strcmp(t->users[i].name, lf->user) != 0)
        i++;
    if (i == t->nusers) {
        user_entry *grown = realloc(t->users, (t->nusers + 1) * sizeof *grown);
        if (!grown) return out_of_memory(p);
        t->users = grown;
        user_entry *e = &t->users[t->nusers];
        *e = (user_entry){.name = strdup(lf->user), .line = line};
        if (!e->name) return out_of_memory(p);
        t->nusers++;
    }
    user_entry *e = &t->users[i];
    user_quotas q = lf->quota; /* -1 where the line sets none */
    if (!e->quotas_seen) {
        e->u.quota = q;
        e->quotas_seen = true;
    } else {
        for (int k = 0; k < 4; k++)
            if (*quota_field(&q, k) != *quota_field(&e->u.quota, k)) {
                snprintf(p->why, p->why_len,
                         "token file %s lines %d and %d give user %s different quotas (%s): "
                         "every line of a user gives the same quotas",
                         p->source, e->line, line, e->name, quota_keys[k]);
                return -1;
            }
    }
    for (const char *g = lf->groups; g && *g;) {
        size_t n = strcspn(g, ",");
        if (!name_ok(g, n)) return refuse(p, line, "groups", NAME_RULE ", separated by commas");
        if (strings_add(&e->groups, &e->u.ngroups, g, n) ||
            strings_add(&t->groups, &t->ngroups, g, n))
            return out_of_memory(p);
        g += n;
        if (*g == ',' && !*++g) return refuse(p, line, "groups", NAME_RULE ", separated by commas");
    }
    *index = i;
    return 0;
}

static int parse_line(parser *p, int line, char *text) {
    char *fields[LINE_MAX_FIELDS];
    size_t n = 0;
    for (char *save = NULL, *f = strtok_r(text, " \t\r\v\f", &save); f;
         f = strtok_r(NULL, " \t\r\v\f", &save)) {
        if (n == LINE_MAX_FIELDS) return refuse(p, line, NULL, "too many fields");
        fields[n++] = f;
    }
    if (n == 0 || fields[0][0] == '#') return 0;
    size_t k = 1;
    caller_role role = ROLE_WRITE;
    if (n > 1 && !strchr(fields[1], '=')) {
        if (users_role_from_name(fields[1], &role))
            return refuse(p, line, NULL,
                          "expected 'TOKEN [read|write|admin] [key=value ...]': the role must "
                          "be read, write or admin");
        k = 2;
    }
    line_fields lf = {.quota = {-1, -1, -1, -1}};
    for (; k < n; k++)
        if (parse_key(p, line, fields[k], &lf)) return -1;
    for (int i = -1; !lf.user && i < 4; i++)
        if (i < 0 ? lf.groups != NULL : lf.quota_set[i])
            return refuse(p, line, i < 0 ? "groups" : quota_keys[i],
                          "groups and quotas belong to a user: give user= on the line");
    int *first = lf.user ? &p->first_named : &p->first_unnamed;
    if (!*first) *first = line;
    if (p->first_named && p->first_unnamed) {
        int bad = lf.user ? p->first_unnamed : line;
        return refuse(p, bad, NULL,
                      "names no user while line %d does: once a line has user=, every line must",
                      lf.user ? line : p->first_named);
    }
    users_table *t = p->t;
    token_entry *grown = realloc(t->tokens, (t->ntokens + 1) * sizeof *grown);
    if (!grown) return out_of_memory(p);
    t->tokens = grown;
    token_entry *e = &t->tokens[t->ntokens];
    *e = (token_entry){.secret = strdup(fields[0]),
                       .len = strlen(fields[0]),
                       .role = role,
                       .user = SIZE_MAX,
                       .line = line};
    if (!e->secret) return out_of_memory(p);
    t->ntokens++;
    return lf.user ? line_user(p, line, &lf, &e->user) : 0;
}

static int cmp_tokens(const void *a, const void *b) {
    const token_entry *x = *(token_entry *const *)a, *y = *(token_entry *const *)b;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    int c = memcmp(x->secret, y->secret, x->len);
    return c ? c : x->line - y->line;
}

/* With users, one token names one user: a token given twice is refused (without it). */
static int check_duplicates(parser *p) {
    users_table *t = p->t;
    if (!t->nusers || t->ntokens < 2) return 0;
    token_entry **order = malloc(t->ntokens * sizeof *order);
    if (!order) return out_of_memory(p);
    for (size_t i = 0; i < t->ntokens; i++)
        order[i] = &t->tokens[i];
    qsort(order, t->ntokens, sizeof *order, cmp_tokens);
    int rc = 0;
    for (size_t i = 1; i < t->ntokens && !rc; i++)
        if (order[i]->len == order[i - 1]->len &&
            memcmp(order[i]->secret, order[i - 1]->secret, order[i]->len) == 0) {
            snprintf(p->why, p->why_len,
                     "token file %s lines %d and %d hold the same token: a token names one user",
                     p->source, order[i - 1]->line, order[i]->line);
            rc = -1;
        }
    free(order);
    return rc;
}

static int cmp_strings(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Once parsed: the users' pointers set (the arrays no longer move) and states found. */
static int finish(parser *p) {
    users_table *t = p->t;
    if (t->ntokens == 0) return refuse(p, 0, NULL, "holds no token");
    if (check_duplicates(p)) return -1;
    for (size_t i = 0; i < t->nusers; i++) {
        user_entry *e = &t->users[i];
        e->u.name = e->name;
        e->u.groups = (const char *const *)e->groups;
        if (e->u.ngroups) qsort(e->groups, e->u.ngroups, sizeof *e->groups, cmp_strings);
        if (!(e->u.state = state_of(e->name))) return out_of_memory(p);
    }
    if (t->ngroups) qsort(t->groups, t->ngroups, sizeof *t->groups, cmp_strings);
    return 0;
}

static void table_free(users_table *t) {
    if (!t) return;
    for (size_t i = 0; i < t->ntokens; i++) {
        /* the secret does not linger in freed memory */
        volatile char *s = t->tokens[i].secret;
        for (size_t k = 0; k < t->tokens[i].len; k++)
            s[k] = 0;
        free(t->tokens[i].secret);
    }
    free(t->tokens);
    for (size_t i = 0; i < t->nusers; i++) {
        for (size_t g = 0; g < t->users[i].u.ngroups; g++)
            free(t->users[i].groups[g]);
        free(t->users[i].groups);
        free(t->users[i].name);
    }
    free(t->users);
    for (size_t g = 0; g < t->ngroups; g++)
        free(t->groups[g]);
    free(t->groups);
    free(t);
}

int users_parse(const char *text, size_t len, const char *source, users_table **out, char *why,
                size_t why_len) {
    parser p = {.source = source, .why = why, .why_len = why_len};
    *out = NULL;
    if (!(p.t = calloc(1, sizeof *p.t))) return out_of_memory(&p);
    atomic_init(&p.t->refs, 1);
    int rc = 0, line = 0;
    for (size_t at = 0; at < len && rc == 0;) {
        size_t end = at;
        while (end < len && text[end] != '\n')
            end++;
        line++;
        char *copy = memchr(text + at, '\0', end - at) ? NULL : strndup(text + at, end - at);
        if (!copy)
            rc = memchr(text + at, '\0', end - at) ? refuse(&p, line, NULL, "holds a NUL byte")
                                                   : out_of_memory(&p);
        else
            rc = parse_line(&p, line, copy);
        free(copy);
        at = end + 1;
    }
    if (rc == 0) rc = finish(&p);
    if (rc) {
        table_free(p.t);
        return -1;
    }
    *out = p.t;
    return 0;
}

int users_load(const char *path, users_table **out, char *why, size_t why_len) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f || fstat(fileno(f), &st) != 0) {
        snprintf(why, why_len, "cannot read token file %s: %s", path, strerror(errno));
        if (f) fclose(f);
        return -1;
    }
    if (!S_ISREG(st.st_mode) || st.st_size > FILE_MAX_BYTES) {
        snprintf(why, why_len, "token file %s: not a file of at most %u bytes", path,
                 FILE_MAX_BYTES);
        fclose(f);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    char *text = malloc(size ? size : 1);
    size_t got = text ? fread(text, 1, size, f) : 0;
    int failed = ferror(f);
    fclose(f);
    if (!text || failed) {
        snprintf(why, why_len, "cannot read token file %s: %s", path,
                 text ? "read error" : "out of memory");
        free(text);
        return -1;
    }
    int rc = users_parse(text, got, path, out, why, why_len);
    free(text);
    return rc;
}

/* ---- the table in force ---- */

static pthread_mutex_t current_lock = PTHREAD_MUTEX_INITIALIZER;
static users_table *_Atomic current;

users_table *users_acquire(void) {
    if (!atomic_load_explicit(&current, memory_order_relaxed)) return NULL; /* no token file */
    pthread_mutex_lock(&current_lock);
    users_table *t = current;
    if (t) atomic_fetch_add(&t->refs, 1);
    pthread_mutex_unlock(&current_lock);
    return t;
}

void users_release(users_table *t) {
    if (t && atomic_fetch_sub(&t->refs, 1) == 1) table_free(t);
}

void users_install(users_table *t) {
    pthread_mutex_lock(&current_lock);
    users_table *old = current;
    current = t;
    pthread_mutex_unlock(&current_lock);
    users_release(old);
}

/* Compare without an early exit, so the time taken does not reveal how much matched. */
static bool token_equal(const char *given, size_t given_len, const char *expected, size_t n) {
    unsigned char diff = (unsigned char)(given_len != n);
    for (size_t i = 0; i < n; i++)
        diff |= (unsigned char)(given[i < given_len ? i : 0] ^ expected[i]);
    return diff == 0 && given_len > 0;
}

int users_match(const users_table *t, const char *token, size_t len, caller_role *role,
                const user **who) {
    int match = -1;
    for (size_t i = 0; t && i < t->ntokens; i++)
        if (token_equal(token, len, t->tokens[i].secret, t->tokens[i].len)) match = (int)i;
    if (match < 0) return -1;
    const token_entry *e = &t->tokens[match];
    *role = e->role;
    *who = e->user == SIZE_MAX ? NULL : &t->users[e->user].u;
    return match;
}

size_t users_token_count(const users_table *t) {
    return t ? t->ntokens : 0;
}

size_t users_count(const users_table *t) {
    return t ? t->nusers : 0;
}

bool users_named(const users_table *t) {
    return t && t->nusers > 0;
}

const user *users_find(const users_table *t, const char *name) {
    for (size_t i = 0; t && i < t->nusers; i++)
        if (strcmp(t->users[i].name, name) == 0) return &t->users[i].u;
    return NULL;
}

size_t users_group_count(const users_table *t) {
    return t ? t->ngroups : 0;
}

const char *users_group(const users_table *t, size_t i) {
    return t && i < t->ngroups ? t->groups[i] : NULL;
}

/* ---- quota.requests ---- */

int users_request_begin(const user *u) {
    if (!u || !u->state) return 0;
    int_fast64_t was = atomic_load(&u->state->in_flight);
    do
        if (u->quota.requests >= 0 && was >= u->quota.requests) return -1;
    while (!atomic_compare_exchange_weak(&u->state->in_flight, &was, was + 1));
    return 0;
}

void users_request_end(const user *u) {
    if (u && u->state) atomic_fetch_sub(&u->state->in_flight, 1);
}

int64_t users_requests_in_flight(const user *u) {
    return u && u->state ? (int64_t)atomic_load(&u->state->in_flight) : 0;
}

int users_metrics_slot(const user *u, int (*slot_of)(const char *name)) {
    if (!u || !u->state) return -1;
    int slot = atomic_load(&u->state->metrics_slot);
    if (slot < 0) atomic_store(&u->state->metrics_slot, slot = slot_of(u->name));
    return slot;
}

/* ---- shared/<group>/ ---- */

/* dir/name made if missing, and opened; a link there is refused (no way out of the data
 * directory). */
static int open_folder(int dir, const char *name, const char *shown, char *why, size_t why_len) {
    if (mkdirat(dir, name, 0755) != 0 && errno != EEXIST) {
        snprintf(why, why_len, "cannot make %s: %s", shown, strerror(errno));
        return -1;
    }
    int fd = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        snprintf(why, why_len, "cannot make %s: %s", shown,
                 errno == ELOOP || errno == ENOTDIR ? "something other than a folder is there"
                                                    : strerror(errno));
    return fd;
}

int users_make_shared(const users_table *t, const char *data_dir, char *why, size_t why_len) {
    if (!users_group_count(t)) return 0;
    int root = open(data_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root < 0) {
        snprintf(why, why_len, "cannot open the data directory: %s", strerror(errno));
        return -1;
    }
    int shared = open_folder(root, "shared", "shared/", why, why_len);
    close(root);
    int rc = shared < 0 ? -1 : 0;
    for (size_t i = 0; rc == 0 && i < t->ngroups; i++) {
        char shown[NAME_MAX_LEN + 16];
        snprintf(shown, sizeof shown, "shared/%s/", t->groups[i]);
        int fd = open_folder(shared, t->groups[i], shown, why, why_len);
        if (fd < 0)
            rc = -1;
        else
            close(fd);
    }
    if (shared >= 0) close(shared);
    return rc;
}

int users_reload(const char *path, const char *data_dir, char *why, size_t why_len) {
    users_table *t;
    if (users_load(path, &t, why, why_len)) return -1;
    if (users_make_shared(t, data_dir, why, why_len)) {
        users_release(t);
        return -1;
    }
    users_install(t);
    return 0;
}

int users_reread(const char *by, char *why, size_t why_len) {
    if (!config.token_file) {
        snprintf(why, why_len, "this daemon has no --token-file to read again");
        log_warn("%s: %s", by, why);
        return -1;
    }
    if (users_reload(config.token_file, config.data_dir, why, why_len)) {
        log_warn("%s: %s; the token file read before stays in force", by, why);
        return -1;
    }
    users_table *t = users_acquire();
    log_notice("%s: token file %s read again: %zu token(s), %zu user(s), %zu group(s)", by,
               config.token_file, users_token_count(t), users_count(t), users_group_count(t));
    users_release(t);
    return 0;
}
