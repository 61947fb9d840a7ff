/* libFuzzer target: the HSDS endpoint's request parser (storage/h5obj*.c, front/hsds_json.c)
 * on untrusted text. The first byte picks the part: a domain and Basic credentials; a
 * `select` over a dataspace whose shape the second byte gives; binary points over it; a
 * JSON body made into a type, a shape and a value of that type (its variable-length parts'
 * binary form read back as it was written, its `fields` picked). Each must refuse or answer
 * within bounds, and never crash. */
#include "config.h"
#include "front/hsds.h"
#include "front/hsds_json.h"
#include "storage/h5obj_int.h"

#include <stdlib.h>
#include <string.h>

config_t config; /* the daemon's is defined in main.c, which fuzz targets do not link */

static void selection(const char *text, const uint8_t *raw, size_t rawlen, uint8_t shape) {
    hsize_t dims[3] = {(hsize_t)(shape & 7) + 1, (hsize_t)(shape >> 3 & 7), 5};
    int rank = 1 + shape % 3;
    hid_t space = H5Screate_simple(rank, dims, NULL);
    h5obj_args a = {.select = raw ? NULL : text, .points = raw, .points_len = rawlen};
    hsize_t rdims[H5S_MAX_RANK];
    int rrank = 0;
    uint64_t n = 0;
    h5ark_error err = {0};
    if (h5obj_select(space, &a, rdims, &rrank, &n, &err) == 0) {
        uint64_t total = 1;
        for (int i = 0; i < rrank; i++)
            total *= rdims[i];
        if (total != n || (hssize_t)n != H5Sget_select_npoints(space)) __builtin_trap();
    } else if (!err.code || !err.message[0]) {
        __builtin_trap();
    }
    H5Sclose(space);
}

/* Elements with variable-length parts in binary, read back: the same bytes again; cut
 * short: refused. */
static void binary_again(hid_t wire, const char *buf, uint64_t n) {
    h5ark_error err = {0};
    char *bin = NULL, *again = NULL;
    size_t len = 0, len2 = 0;
    if (h5obj_vlen_binary(wire, buf, n, 1u << 24, &bin, &len, &err)) return;
    char *copy = calloc(n ? n : 1, H5Tget_size(wire));
    if (copy) {
        if (h5obj_vlen_from_binary(wire, bin, len, n, copy, &err)) __builtin_trap();
        if (h5obj_vlen_binary(wire, copy, n, 1u << 24, &again, &len2, &err) || len2 != len ||
            memcmp(bin, again, len) != 0)
            __builtin_trap();
        h5obj_vlen_free(wire, copy, n);
        if (len && h5obj_vlen_from_binary(wire, bin, len - 1, n, copy, &err) == 0) __builtin_trap();
        h5obj_vlen_free(wire, copy, n); /* what was read before the end */
    }
    free(copy);
    free(again);
    free(bin);
}

static void body(const char *text, size_t len) {
    json_error_t je;
    json_t *j = json_loadb(text, len, 0, &je);
    if (!j) return;
    h5ark_error err = {0};
    hid_t type = h5obj_make_type(json_object_get(j, "type"), &err);
    int rank;
    hsize_t dims[H5S_MAX_RANK], max[H5S_MAX_RANK];
    bool null, vlen;
    if (type >= 0 && h5obj_make_shape(json_object_get(j, "shape"), json_object_get(j, "maxdims"),
                                      &rank, dims, max, &null, &err) == 0) {
        uint64_t n = 1;
        for (int i = 0; i < rank; i++)
            n = dims[i] && n <= (1u << 20) / dims[i] ? n * dims[i] : (1u << 20) + 1;
        hid_t wire = h5obj_wire_type(type, &vlen, &err);
        if (wire >= 0 && !null && n <= (1u << 16)) {
            size_t size = H5Tget_size(wire);
            char *buf = calloc(n ? n : 1, size);
            if (buf && h5obj_values_from_json(wire, json_object_get(j, "value"), buf, dims, rank,
                                              &err) == 0) {
                h5ark_value *v = h5obj_values_json(wire, buf, n, dims, rank, &err);
                size_t tl;
                char *t = v ? hsds_json_text(v, &tl) : NULL;
                free(t);
                h5ark_value_destroy(&v);
                if (vlen) binary_again(wire, buf, n);
            }
            if (vlen) h5obj_vlen_free(wire, buf, n);
            free(buf);
            const char *fields = json_string_value(json_object_get(j, "fields"));
            hid_t sub = fields ? h5obj_wire_fields(wire, fields, &err) : -1;
            if (sub >= 0) H5Tclose(sub);
        }
        if (wire >= 0) H5Tclose(wire);
    }
    if (type >= 0) H5Tclose(type);
    json_decref(j);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static int ready;
    if (!ready) {
        H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
        ready = 1;
    }
    if (size < 2) return 0;
    char *text = malloc(size - 1);
    if (!text) return 0;
    memcpy(text, data + 2, size - 2);
    text[size - 2] = '\0';
    h5ark_error err = {0};
    switch (data[0] % 4) {
    case 0: {
        char plain[256];
        long n = hsds_base64_decode(text, plain, sizeof plain);
        if (n >= (long)sizeof plain) __builtin_trap();
        h5obj_check_domain(text, &err);
        break;
    }
    case 1: selection(text, NULL, 0, data[1]); break;
    case 2: selection(NULL, data + 2, size - 2, data[1]); break;
    default: body(text, size - 2); break;
    }
    free(text);
    return 0;
}
