/* libFuzzer target: the token file's parser (users.h) on untrusted text. A file it takes
 * must hold what it says: every line's token found with its user, users' names and groups
 * well formed, groups sorted and each once; a file it refuses says why in one line that
 * names a line or the file. */
#include "config.h"
#include "users.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

config_t config; /* the daemon's is defined in main.c, which fuzz targets do not link */

static int name_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > 64 || strcmp(s, ".") == 0 || strcmp(s, "..") == 0) return 0;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") == n;
}

/* Every line's first field (not a comment) is a token the table knows. */
static void check_tokens(const char *text, size_t len, const users_table *t) {
    size_t at = 0;
    while (at < len) {
        size_t end = at;
        while (end < len && text[end] != '\n')
            end++;
        size_t s = at;
        while (s < end && strchr(" \t\r\v\f", text[s]))
            s++;
        size_t e = s;
        while (e < end && !strchr(" \t\r\v\f", text[e]))
            e++;
        if (e > s && text[s] != '#') {
            caller_role role;
            const user *u;
            if (users_match(t, text + s, e - s, &role, &u) < 0) abort();
            if (users_named(t) != (u != NULL)) abort();
            if (u && users_find(t, u->name) != u) abort();
        }
        at = end + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    users_table *t = NULL;
    char why[512];
    if (users_parse(text, size, "fuzz", &t, why, sizeof why) != 0) {
        if (t || strncmp(why, "token file fuzz", 15) != 0 || strchr(why, '\n')) abort();
        return 0;
    }
    check_tokens(text, size, t);
    for (size_t i = 0; i < users_group_count(t); i++) {
        if (!name_ok(users_group(t, i))) abort();
        if (i && strcmp(users_group(t, i - 1), users_group(t, i)) >= 0) abort();
    }
    users_release(t);
    return 0;
}
