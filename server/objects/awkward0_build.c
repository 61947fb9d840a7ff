/* awkward0 schemas: the arrays an interpreted call makes, as awkward 2 form nodes and
 * buffers (numpy buffers and records, decompressed blobs, lists, unions, joined chunks;
 * see awkward0_interp.h). */
#include "awkward0_interp.h"

#include "awkward.h"

#include <lz4.h>
#include <lzma.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* int64 values as a new buffer "<key>-<attr>" */
int ak0_int64_buf(interp *c, const char *key, const char *attr, int64_t *v, uint64_t n) {
    return ak0_add_buf(c, key, attr, (unsigned char *)v, n * 8);
}

/* A NumpyArray of the items of dtype d at byte `off` of each of n records of `stride` bytes
 * (a plain array: stride is the item, off 0), little-endian; *bi its buffer. */
static json_t *numpy_form(interp *c, const unsigned char *src, uint64_t n, uint64_t stride,
                          uint64_t off, const val *d, int *bi) {
    uint64_t w = d->itemsize * d->inner, need = n * w;
    unsigned char *data = malloc(need ? need : 1);
    if (!data) {
        ak0_oom(c);
        return NULL;
    }
    if (stride == w)
        memcpy(data, src + off, need);
    else
        for (uint64_t r = 0; r < n; r++)
            memcpy(data + r * w, src + r * stride + off, w);
    if (d->swap) /* awkward 2 buffers are little-endian; complex swaps each half */
        ak_swap_bytes(data, need,
                      strncmp(d->prim, "complex", 7) == 0 ? d->itemsize / 2 : d->itemsize);
    char key[32];
    ak0_next_key(c, key, sizeof key);
    if ((*bi = ak0_add_buf(c, key, "data", data, need)) < 0) return NULL;
    json_t *f = ak0_form_node("NumpyArray", key);
    if (!f || json_object_set_new(f, "primitive", json_string(d->prim)) ||
        json_object_set_new(f, "inner_shape", d->shape ? json_copy(d->shape) : json_array())) {
        json_decref(f);
        ak0_oom(c);
        return NULL;
    }
    return f;
}

/* A RecordArray of a record dtype's fields (numpy's structured arrays: awkward 2 makes
 * records of them too), each field's column taken out of the packed records. */
static json_t *record_form(interp *c, const unsigned char *src, uint64_t n, uint64_t stride,
                           uint64_t off, const val *d) {
    char key[32];
    ak0_next_key(c, key, sizeof key);
    json_t *f = ak0_form_node("RecordArray", key), *fields = json_array(), *contents = json_array();
    if (!f || !fields || !contents || json_object_set(f, "fields", fields) ||
        json_object_set(f, "contents", contents)) {
        ak0_oom(c);
        f = NULL;
    }
    for (size_t i = 0; f && i < d->nfields; i++) {
        const val *fd = d->fields[i];
        int bi;
        json_t *sub = fd->nfields ? record_form(c, src, n, stride, off, fd)
                                  : numpy_form(c, src, n, stride, off, fd, &bi);
        if (sub && (json_array_append_new(contents, sub) ||
                    json_array_append_new(fields, json_string(d->fnames[i]))))
            sub = NULL, ak0_oom(c);
        if (!sub) { /* the error is said */
            json_decref(f);
            f = NULL;
        }
        off += fd->itemsize * fd->inner;
    }
    json_decref(fields);
    json_decref(contents);
    return f;
}

val *ak0_frombuffer(interp *c, val *b, val *d, json_t *n) {
    int64_t count = ak0_json_int_or(n, -1);
    if (count < 0 || (uint64_t)count > AK0_MAX_BLOB) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: frombuffer count is not a size");
        return NULL;
    }
    uint64_t need = (uint64_t)count * d->itemsize * d->inner;
    if (need > b->nbytes) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                   "awkward0 schema: a blob of %llu bytes holds fewer than %lld items of %s",
                   (unsigned long long)b->nbytes, (long long)count, d->prim);
        return NULL;
    }
    if (d->nfields) { /* a record array: a column per field */
        json_t *f = record_form(c, b->bytes, (uint64_t)count, d->itemsize, 0, d);
        return f ? ak0_array_val(c, f, (uint64_t)count) : NULL;
    }
    int bi;
    json_t *f =
        numpy_form(c, b->bytes, (uint64_t)count, need / (count ? (uint64_t)count : 1), 0, d, &bi);
    val *v = f ? ak0_array_val(c, f, (uint64_t)count) : NULL;
    if (v) {
        v->buf = bi;
        v->dt = d;
    }
    return v;
}

static val *bytes_val(interp *c, unsigned char *out, uint64_t len) {
    val *v = ak0_new_val(c, V_BYTES);
    if (!v || !ak0_keep(c, out)) {
        if (v) ak0_oom(c);
        return NULL;
    }
    v->bytes = out;
    v->nbytes = len;
    return v;
}

/* A decompressor's output buffer of cap bytes (reserved first), or NULL. */
static unsigned char *blob_out(interp *c, uint64_t cap) {
    return ak0_reserve(c, cap) ? NULL : malloc(cap);
}

/* A decompressor's output buffer, full: doubled, up to AK0_MAX_BLOB; false when it may not
 * grow (the blob is refused) or memory ran out (*out then still valid, freed by the caller). */
static bool grow_blob(interp *c, unsigned char **out, uint64_t *cap) {
    if (*cap >= AK0_MAX_BLOB || ak0_reserve(c, *cap)) return false;
    unsigned char *n = realloc(*out, *cap * 2);
    if (!n) return false;
    *out = n;
    *cap *= 2;
    return true;
}

val *ak0_inflate(interp *c, val *b) {
    z_stream zs = {0};
    if (inflateInit(&zs) != Z_OK) {
        ak0_oom(c);
        return NULL;
    }
    uint64_t cap = b->nbytes * 4 + 64, len = 0;
    unsigned char *out = blob_out(c, cap);
    zs.next_in = (unsigned char *)b->bytes;
    int rc = Z_OK;
    uint64_t left = b->nbytes;
    while (out && rc != Z_STREAM_END) {
        if (len == cap && !grow_blob(c, &out, &cap)) break;
        uInt in = left > UINT32_MAX ? UINT32_MAX : (uInt)left;
        zs.avail_in = in;
        uInt room = cap - len > UINT32_MAX ? UINT32_MAX : (uInt)(cap - len);
        zs.next_out = out + len;
        zs.avail_out = room;
        rc = inflate(&zs, Z_NO_FLUSH);
        left -= in - zs.avail_in;
        len += room - zs.avail_out;
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) break;
        if (rc == Z_BUF_ERROR && zs.avail_out != 0) break; /* input ended early */
    }
    inflateEnd(&zs);
    if (!out || rc != Z_STREAM_END) {
        free(out);
        if (!c->limited)
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                       "awkward0 schema: a zlib blob does not decompress (or is over 4 GiB)");
        return NULL;
    }
    return bytes_val(c, out, len);
}

/* The decoder's own memory (its dictionary, which a stream's header chooses): xz's largest
 * preset needs 65 MiB; a hostile header asking for gigabytes is refused, not allocated. */
#define AK0_LZMA_MEMLIMIT (UINT64_C(128) << 20)

/* lzma.decompress: .xz or .lzma, as Python's FORMAT_AUTO takes them */
val *ak0_unxz(interp *c, val *b) {
    lzma_stream zs = LZMA_STREAM_INIT;
    if (lzma_auto_decoder(&zs, AK0_LZMA_MEMLIMIT, 0) != LZMA_OK) {
        ak0_oom(c);
        return NULL;
    }
    uint64_t cap = b->nbytes * 4 + 64, len = 0;
    unsigned char *out = blob_out(c, cap);
    zs.next_in = b->bytes;
    zs.avail_in = b->nbytes;
    lzma_ret rc = LZMA_OK;
    while (out && rc == LZMA_OK) {
        if (len == cap && !grow_blob(c, &out, &cap)) break;
        zs.next_out = out + len;
        zs.avail_out = cap - len;
        rc = lzma_code(&zs, LZMA_FINISH);
        len = cap - zs.avail_out;
    }
    lzma_end(&zs);
    if (!out || rc != LZMA_STREAM_END) {
        free(out);
        if (!c->limited && rc == LZMA_MEMLIMIT_ERROR)
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                       "awkward0 schema: an lzma blob needs more than %llu MiB to decompress",
                       (unsigned long long)(AK0_LZMA_MEMLIMIT >> 20));
        else if (!c->limited)
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                       "awkward0 schema: an lzma blob does not decompress (or is over 4 GiB)");
        return NULL;
    }
    return bytes_val(c, out, len);
}

/* lz4.block.decompress: the size (4 bytes, little-endian) then one LZ4 block */
val *ak0_unlz4(interp *c, val *b) {
    uint32_t size = 0;
    if (b->nbytes >= 4)
        size = (uint32_t)b->bytes[0] | (uint32_t)b->bytes[1] << 8 | (uint32_t)b->bytes[2] << 16 |
               (uint32_t)b->bytes[3] << 24;
    unsigned char *out = b->nbytes >= 4 && size <= INT32_MAX && b->nbytes - 4 <= INT32_MAX
                             ? blob_out(c, (uint64_t)size + 1)
                             : NULL;
    int got = out ? LZ4_decompress_safe((const char *)b->bytes + 4, (char *)out,
                                        (int)(b->nbytes - 4), (int)size)
                  : -1;
    if (got < 0 || (uint32_t)got != size) {
        free(out);
        if (!c->limited)
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                       "awkward0 schema: an lz4.block blob does not decompress");
        return NULL;
    }
    return bytes_val(c, out, size);
}

/* offsets from counts (JaggedArray.fromcounts, StringArray.fromcounts) */
static int64_t *offsets_of(interp *c, val *counts) {
    int64_t *n = ak0_ints_of(c, counts, "counts");
    int64_t *off = n ? malloc((counts->length + 1) * sizeof *off) : NULL;
    if (n && !off) ak0_oom(c);
    for (uint64_t i = 0; off && i <= counts->length; i++) {
        if (i && n[i - 1] < 0) {
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a negative count");
            free(off);
            off = NULL;
            break;
        }
        off[i] = i ? off[i - 1] + n[i - 1] : 0;
    }
    free(n);
    return off;
}

val *ak0_list_offsets(interp *c, val *counts, val *content, json_t *params, json_t *content_params,
                      bool given) {
    /* counts, or (given) the offsets themselves (fromoffsets: one more than the rows) */
    int64_t *off = given ? ak0_ints_of(c, counts, "offsets") : offsets_of(c, counts);
    if (off && given && counts->length == 0) {
        free(off);
        off = NULL;
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: offsets are empty");
    }
    if (!off) {
        json_decref(params);
        json_decref(content_params);
        return NULL;
    }
    if (given) counts->length--; /* rows */
    ak0_drop_buf(c, counts->buf);
    char key[32];
    ak0_next_key(c, key, sizeof key);
    if (ak0_int64_buf(c, key, "offsets", off, counts->length + 1) < 0) return NULL;
    json_t *f = ak0_form_node("ListOffsetArray", key);
    if (!f) return ak0_array_val(c, NULL, 0);
    json_object_set_new(f, "offsets", json_string("i64"));
    if (params) json_object_set_new(f, "parameters", params);
    json_t *cf = content->form;
    content->form = NULL;
    if (content_params) { /* on a copy: the form as given stays as it was for other uses */
        json_t *copy = json_copy(cf);
        json_decref(cf);
        if ((cf = copy))
            json_object_set_new(cf, "parameters", content_params);
        else
            json_decref(content_params);
    }
    json_object_set_new(f, "content", cf);
    return ak0_array_val(c, f, counts->length);
}

/* A UnionArray of the arrays in cs with the tags and index the caller made (taken over:
 * freed on failure); rc is the caller's outcome so far. The schema's own tags (t) and index
 * (x, when it gave one) give way to the new buffers. */
val *ak0_union_val(interp *c, int rc, val *t, val *x, val *cs, int8_t *tags, int64_t *xv) {
    json_t *contents = rc == 0 ? json_array() : NULL;
    for (size_t i = 0; contents && i < cs->nitems; i++) {
        val *v = cs->items[i];
        if (v->kind != V_ARRAY) {
            rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                            "awkward0 schema: a union content is not an array");
            break;
        }
        if (!(v = ak0_take(c, v))) {
            rc = -1;
            break;
        }
        json_array_append_new(contents, v->form);
        v->form = NULL;
    }
    char key[32];
    ak0_next_key(c, key, sizeof key);
    if (rc || !contents) {
        free(xv);
        free(tags);
        json_decref(contents);
        if (!rc) ak0_oom(c);
        return NULL;
    }
    ak0_drop_buf(c, t->buf);
    if (x) ak0_drop_buf(c, x->buf);
    if (ak0_add_buf(c, key, "tags", (unsigned char *)tags, t->length) < 0 ||
        ak0_int64_buf(c, key, "index", xv, t->length) < 0) {
        json_decref(contents);
        return NULL;
    }
    json_t *f = ak0_form_node("UnionArray", key);
    if (!f) {
        json_decref(contents);
        return ak0_array_val(c, NULL, 0);
    }
    json_object_set_new(f, "tags", json_string("i8"));
    json_object_set_new(f, "index", json_string("i64"));
    json_object_set_new(f, "contents", contents);
    return ak0_array_val(c, f, t->length);
}

static int find_buf(interp *c, json_t *f, const char *attr) {
    char name[48];
    snprintf(name, sizeof name, "%s-%s", json_string_value(json_object_get(f, "form_key")), attr);
    for (size_t i = 0; i < c->nbufs; i++)
        if (strcmp(c->bufs[i].name, name) == 0) return (int)i;
    return -1;
}

static bool is_class(json_t *f, const char *cls) {
    const char *s = json_string_value(json_object_get(f, "class"));
    return s && strcmp(s, cls) == 0;
}

/* Items in a NumpyArray's buffer (0 when an item has no bytes), rows of a ListOffsetArray:
 * the lengths of the nodes concat takes. */
static uint64_t node_len(interp *c, json_t *f) {
    int b = find_buf(c, f, is_class(f, "NumpyArray") ? "data" : "offsets");
    if (b < 0) return 0;
    if (is_class(f, "ListOffsetArray"))
        return c->bufs[b].nbytes < 8 ? 0 : c->bufs[b].nbytes / 8 - 1;
    val d = {0};
    ak0_parse_dtype(json_string_value(json_object_get(f, "primitive")), &d);
    uint64_t w = d.itemsize;
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(f, "inner_shape"), i, k) {
        w *= (uint64_t)json_integer_value(k);
    }
    return w ? c->bufs[b].nbytes / w : 0;
}

/* The int64 offsets of a ListOffsetArray of this interpreter, as an array of n + 1. */
static const int64_t *offsets_at(interp *c, json_t *f, uint64_t *n) {
    int b = find_buf(c, f, "offsets");
    if (b < 0 || c->bufs[b].nbytes < 8) return NULL;
    *n = c->bufs[b].nbytes / 8 - 1;
    return (const int64_t *)c->bufs[b].data;
}

/* ChunkedArray: the n chunks' forms (all of one type) as one array, their buffers joined.
 * NumpyArray chunks join their data; ListOffsetArray chunks their contents, with offsets
 * moved by the contents before them (a ListArray when the rows do not tile the contents). */
static json_t *concat(interp *c, json_t **f, size_t n, int depth) {
    if (depth > AK0_MAX_DEPTH) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: nested deeper than %d levels",
                   AK0_MAX_DEPTH);
        return NULL;
    }
    bool numpy = is_class(f[0], "NumpyArray"), list = is_class(f[0], "ListOffsetArray");
    for (size_t i = 1; i < n; i++) {
        static const char *const same[] = {"class", "parameters", "primitive", "inner_shape"};
        for (size_t k = 0; k < sizeof same / sizeof same[0]; k++)
            if (!json_equal(json_object_get(f[0], same[k]), json_object_get(f[i], same[k])) &&
                (json_object_get(f[0], same[k]) || json_object_get(f[i], same[k]))) {
                ak0_not_read(c, "a ChunkedArray whose chunks differ in type");
                return NULL;
            }
    }
    if (!numpy && !list) {
        char what[120];
        snprintf(what, sizeof what, "a ChunkedArray of %.40s chunks",
                 json_string_value(json_object_get(f[0], "class")));
        ak0_not_read(c, what);
        return NULL;
    }
    char key[32];
    ak0_next_key(c, key, sizeof key);
    json_t *out = json_copy(f[0]);
    if (!out || json_object_set_new(out, "form_key", json_string(key))) {
        json_decref(out);
        ak0_oom(c);
        return NULL;
    }
    if (numpy) {
        uint64_t total = 0;
        for (size_t i = 0; i < n; i++) {
            int b = find_buf(c, f[i], "data");
            total += b < 0 ? 0 : c->bufs[b].nbytes;
        }
        unsigned char *data = malloc(total ? total : 1);
        uint64_t pos = 0;
        for (size_t i = 0; data && i < n; i++) {
            int b = find_buf(c, f[i], "data");
            if (b < 0) continue;
            memcpy(data + pos, c->bufs[b].data, c->bufs[b].nbytes);
            pos += c->bufs[b].nbytes;
            ak0_drop_buf(c, b);
        }
        if (!data) ak0_oom(c);
        if (!data || ak0_add_buf(c, key, "data", data, total) < 0) {
            json_decref(out);
            return NULL;
        }
        return out;
    }
    json_t **cs = calloc(n, sizeof *cs);
    uint64_t rows = 0, *clen = calloc(n, sizeof *clen);
    bool tiled = true;
    int rc = cs && clen ? 0 : ak0_oom(c);
    for (size_t i = 0; rc == 0 && i < n; i++) {
        uint64_t r = 0;
        const int64_t *o = offsets_at(c, f[i], &r);
        if (!o || !(cs[i] = json_object_get(f[i], "content"))) {
            rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a chunk has no offsets");
            break;
        }
        clen[i] = node_len(c, cs[i]);
        for (uint64_t k = 0; rc == 0 && k <= r; k++)
            if (o[k] < 0 || (uint64_t)o[k] > clen[i] || (k && o[k] < o[k - 1]))
                rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                                "awkward0 schema: a ChunkedArray chunk's offsets are out of its "
                                "content");
        tiled = tiled && o[0] == 0 && (uint64_t)o[r] == clen[i];
        rows += r;
    }
    json_t *content = rc == 0 ? concat(c, cs, n, depth + 1) : NULL;
    int64_t *a = content ? malloc((rows + 1) * 8) : NULL, *b = NULL;
    if (content && !a) ak0_oom(c);
    if (a && !tiled && !(b = malloc((rows ? rows : 1) * 8))) ak0_oom(c);
    if (a && (tiled || b)) {
        uint64_t pos = 0, shift = 0;
        a[0] = 0;
        for (size_t i = 0; i < n; i++) {
            uint64_t r = 0;
            const int64_t *o = offsets_at(c, f[i], &r);
            for (uint64_t k = 0; k < r; k++, pos++) {
                if (tiled) {
                    a[pos + 1] = o[k + 1] + (int64_t)shift;
                } else {
                    a[pos] = o[k] + (int64_t)shift;
                    b[pos] = o[k + 1] + (int64_t)shift;
                }
            }
            ak0_drop_buf(c, find_buf(c, f[i], "offsets"));
            shift += clen[i];
        }
        if (tiled) {
            rc = ak0_int64_buf(c, key, "offsets", a, rows + 1);
        } else if ((rc = ak0_int64_buf(c, key, "starts", a, rows)) >= 0) {
            rc = ak0_int64_buf(c, key, "stops", b, rows);
        } else {
            free(b); /* add_buf took a, even failing */
        }
        a = b = NULL;
    } else {
        rc = -1;
    }
    free(a);
    free(b);
    free(cs);
    free(clen);
    if (rc < 0 || (!tiled && (json_object_del(out, "offsets") ||
                              json_object_set_new(out, "class", json_string("ListArray")) ||
                              json_object_set_new(out, "starts", json_string("i64")) ||
                              json_object_set_new(out, "stops", json_string("i64"))))) {
        if (rc == 0) ak0_oom(c);
        json_decref(content);
        json_decref(out);
        return NULL;
    }
    json_object_set_new(out, "content", content);
    return out;
}

val *ak0_chunked(interp *c, val *cs, json_t *counts, int depth) {
    char key[32];
    if (cs->nitems == 0) { /* no chunks, no type: awkward 2's EmptyArray */
        ak0_next_key(c, key, sizeof key);
        return ak0_array_val(c, ak0_form_node("EmptyArray", key), 0);
    }
    json_t **fs = calloc(cs->nitems, sizeof *fs);
    uint64_t total = 0;
    int rc = fs ? 0 : ak0_oom(c);
    for (size_t i = 0; rc == 0 && i < cs->nitems; i++) {
        val *v = cs->items[i];
        if (v->kind != V_ARRAY) {
            rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                            "awkward0 schema: a ChunkedArray chunk is not an array");
            break;
        }
        if (!(v = ak0_take(c, v))) {
            rc = -1;
            break;
        }
        json_t *k = json_is_array(counts) ? json_array_get(counts, i) : NULL;
        if (k && ak0_json_int_or(k, -1) != (int64_t)v->length) {
            rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                            "awkward0 schema: ChunkedArray's counts do not match its chunks");
            break;
        }
        fs[i] = v->form;
        v->form = NULL;
        total += v->length;
    }
    json_t *f = NULL;
    if (rc == 0) f = cs->nitems == 1 ? json_incref(fs[0]) : concat(c, fs, cs->nitems, depth + 1);
    for (size_t i = 0; fs && i < cs->nitems; i++)
        json_decref(fs[i]);
    free(fs);
    if (!f) return NULL;
    return ak0_array_val(c, f, total);
}
