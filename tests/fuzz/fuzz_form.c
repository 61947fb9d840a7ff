/* libFuzzer target: the awkward form parser on untrusted JSON, then an awkward array built
 * from that form with buffers of fuzzed bytes (every buffer the form names, cut from the
 * rest of the input), as put and readhdf would build it; and the same JSON as an awkward0
 * schema through the whitelist check. */
#include "config.h"
#include "locales.h"
#include "objects/awkward.h"
#include "objects/awkward0.h"
#include "objects/awkward_form.h"
#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

config_t config;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    config.locales = 3;
    config.max_memory = 64u << 20;
    registry_init(config.max_memory);
    locales_start(config.locales, 0, 1);
    return 0;
}

typedef struct {
    const uint8_t *bytes;
    uint64_t len;
} blob;

static int read_blob(const void *ctx, size_t i, uint64_t offset, void *dst, uint64_t n) {
    (void)i;
    const blob *b = ctx;
    for (uint64_t k = 0; k < n; k++) /* the same bytes, repeated: any size is readable */
        ((uint8_t *)dst)[k] = b->len ? b->bytes[(offset + k) % b->len] : 0;
    return 0;
}

typedef struct {
    const uint8_t *bytes;
    size_t len;
} blob0;

static int read_blob0(void *ctx, const char *key, const unsigned char **data, uint64_t *n) {
    (void)key;
    const blob0 *b = ctx;
    *data = b->bytes;
    *n = b->len;
    return 0;
}

typedef struct {
    const ak0_result *r;
} blob_set;

static int read_set(const void *ctx, size_t i, uint64_t offset, void *dst, uint64_t n) {
    const ak0_result *r = ((const blob_set *)ctx)->r;
    if (offset > r->nbytes[i] || n > r->nbytes[i] - offset) return -1;
    memcpy(dst, r->data[i] + offset, n);
    return 0;
}

static void collect(const ak_node *n, char (*names)[300], size_t *count) {
    ak_buffer_role roles[3];
    size_t nb = ak_node_buffers(n, roles);
    for (size_t i = 0; i < nb && *count < 64; i++)
        ak_buffer_name(n, roles[i], names[(*count)++], 300);
    for (size_t i = 0; i < n->ncontents; i++)
        collect(n->contents[i], names, count);
}

/* Input: the form JSON, a NUL, then one byte of length and the buffers' bytes. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const uint8_t *nul = memchr(data, 0, size);
    size_t flen = nul ? (size_t)(nul - data) : size;
    h5ark_error err = {0};
    char top[100];
    ak0_top_call((const char *)data, flen, top, sizeof top);
    if (ak0_check_schema((const char *)data, flen, NULL, 0, &err) == 0 && nul) {
        /* every blob the schema reads is the rest of the input */
        blob0 b0 = {nul + 1, size - (size_t)(nul + 1 - data)};
        ak0_result r;
        if (ak0_interpret((const char *)data, flen, read_blob0, &b0, &r, &err) == 0) {
            const char **names = (const char **)r.names;
            blob_set bs = {&r};
            ak_source src = {r.n, names, r.nbytes, read_set, &bs};
            object_release(awkward_build(r.form, strlen(r.form), r.length, &src, &err));
            ak0_result_free(&r);
        }
    }
    err = (h5ark_error){0};
    ak_form *form = ak_form_parse((const char *)data, flen, &err);
    if (!form || !nul || (size_t)(nul - data) + 2 > size) {
        ak_form_free(form);
        return 0;
    }
    static char names[64][300];
    size_t count = 0;
    collect(form->root, names, &count);
    const uint8_t *rest = nul + 2;
    uint64_t rlen = size - (size_t)(rest - data), length = nul[1] % 32;
    const char *ptrs[64];
    uint64_t nbytes[64];
    for (size_t i = 0; i < count; i++) {
        ptrs[i] = names[i];
        nbytes[i] = rlen ? (uint64_t)rest[i % rlen] * 8 : 0; /* whole int64s, mostly */
    }
    blob b = {rest, rlen};
    ak_source src = {count, ptrs, nbytes, read_blob, &b};
    object *obj = awkward_build(form->json, flen, length, &src, &err);
    object_release(obj);
    ak_form_free(form);
    return 0;
}
