/* awkward0 schemas: the interpreter's evaluation and the calls by name (see awkward0.h):
 * each call's arguments are evaluated here and handed to the arrays it makes
 * (awkward0_build.c); values and their memory are awkward0_values.c's. */
#include "awkward0_interp.h"

#include "registry.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *keep_json(interp *c, json_t *j) {
    if (json_array_append_new(c->owned, j)) {
        h5ark_fail(c->err, H5ARK_RESOURCE_LIMIT, "out of memory");
        return NULL;
    }
    return j;
}

static val *eval(interp *c, json_t *node, int depth);

/* A shape: an integer or an array of them (numpy takes both), none negative. */
static bool shape_of(json_t *s, uint64_t *n) {
    *n = 1;
    if (json_is_integer(s)) {
        json_int_t k = json_integer_value(s);
        *n = (uint64_t)k;
        return k >= 0 && k <= (1 << 24);
    }
    if (!json_is_array(s) || json_array_size(s) > 8) return false;
    for (size_t i = 0; i < json_array_size(s); i++) {
        json_t *k = json_array_get(s, i);
        if (!json_is_integer(k) || json_integer_value(k) < 0 || json_integer_value(k) > (1 << 24))
            return false;
        *n *= (uint64_t)json_integer_value(k);
    }
    return *n <= (1 << 24);
}

/* awkward0's JSON of a numpy dtype: "int64" or ">u2"; [base, shape] (a sub-array); or a
 * record, [[name, dtype], ...] or [[name, dtype, shape], ...], its fields packed in order. */
static val *dtype_val(interp *c, json_t *x, int depth) {
    if (depth > AK0_MAX_DEPTH) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: nested deeper than %d levels",
                   AK0_MAX_DEPTH);
        return NULL;
    }
    val *v = ak0_new_val(c, V_DTYPE);
    if (!v) return NULL;
    v->inner = 1;
    if (json_is_string(x)) {
        if (ak0_parse_dtype(json_string_value(x), v)) return v;
        ak0_not_read(c, "a numpy dtype other than a number, a bool or a record of them");
        return NULL;
    }
    json_t *shape = json_array_get(x, 1);
    if (json_array_size(x) == 2 &&
        (json_is_integer(shape) ||
         (json_is_array(shape) &&
          (json_array_size(shape) == 0 || json_is_integer(json_array_get(shape, 0)))))) {
        val *base = dtype_val(c, json_array_get(x, 0), depth + 1);
        if (!base) return NULL;
        if (base->nfields) {
            ak0_not_read(c, "a sub-array of records");
            return NULL;
        }
        uint64_t n;
        if (!shape_of(shape, &n) || base->inner * n > (1 << 24)) {
            ak0_not_read(c, "that sub-array dtype");
            return NULL;
        }
        *v = *base;
        v->inner = base->inner * n;
        /* inner_shape: the base's then this one's, as numpy nests them */
        json_t *s = json_is_integer(shape) ? json_pack("[O]", shape) : json_copy(shape);
        if (!s || !keep_json(c, s)) return NULL;
        if (base->shape) json_array_extend(s, base->shape);
        v->shape = s;
        return v;
    }
    size_t nf = json_array_size(x);
    if (!json_is_array(x) || nf == 0 || nf > 4096) {
        ak0_not_read(c, "that numpy dtype");
        return NULL;
    }
    v->fields = ak0_keep(c, calloc(nf, sizeof *v->fields));
    v->fnames = ak0_keep(c, calloc(nf, sizeof *v->fnames));
    if (!v->fields || !v->fnames) {
        ak0_oom(c);
        return NULL;
    }
    v->nfields = nf;
    for (size_t i = 0; i < nf; i++) {
        json_t *f = json_array_get(x, i);
        size_t fl = json_array_size(f);
        if ((fl != 2 && fl != 3) || !json_is_string(json_array_get(f, 0))) {
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                       "awkward0 schema: a record dtype's field is not [name, dtype]");
            return NULL;
        }
        json_t *sub = json_array_get(f, 1);
        json_t *pair = fl == 3 ? json_pack("[OO]", sub, json_array_get(f, 2)) : NULL;
        if (fl == 3 && (!pair || !keep_json(c, pair))) return NULL;
        val *fd = dtype_val(c, pair ? pair : sub, depth + 1);
        if (!fd) return NULL;
        v->fields[i] = fd;
        v->fnames[i] = json_string_value(json_array_get(f, 0));
        v->itemsize += fd->itemsize * fd->inner;
        if (v->itemsize > (1u << 28)) { /* so that count * itemsize cannot overflow */
            ak0_not_read(c, "a record dtype of more than 256 MiB");
            return NULL;
        }
    }
    snprintf(v->prim, sizeof v->prim, "record");
    return v;
}

static val *ak0_arg(interp *c, json_t *call, size_t i, int depth) {
    json_t *args = json_object_get(call, "args");
    json_t *a = json_is_array(args) ? json_array_get(args, i) : NULL;
    if (!a) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a call lacks argument %zu", i);
        return NULL;
    }
    return eval(c, a, depth + 1);
}

/* The bytes a decompression is given: its argument 0. */
static val *bytes_arg(interp *c, json_t *j, int depth) {
    return ak0_want(c, ak0_arg(c, j, 0, depth), V_BYTES, "decompress's buffer");
}

/* numpy.frombuffer(buffer, dtype, count) */
static val *frombuffer(interp *c, json_t *j, int depth) {
    val *b = ak0_want(c, ak0_arg(c, j, 0, depth), V_BYTES, "frombuffer's buffer");
    val *d = b ? ak0_want(c, ak0_arg(c, j, 1, depth), V_DTYPE, "frombuffer's dtype") : NULL;
    val *n = d ? ak0_want(c, ak0_arg(c, j, 2, depth), V_JSON, "frombuffer's count") : NULL;
    return n ? ak0_frombuffer(c, b, d, n->json) : NULL;
}

/* ChunkedArray(chunks[, counts]) */
static val *chunked(interp *c, json_t *j, int depth) {
    val *cs = ak0_want(c, ak0_arg(c, j, 0, depth), V_LIST, "ChunkedArray's chunks");
    if (!cs) return NULL;
    json_t *counts = NULL;
    if (json_array_size(json_object_get(j, "args")) > 1) {
        val *cn = ak0_want(c, ak0_arg(c, j, 1, depth), V_JSON, "ChunkedArray's counts");
        if (!cn) return NULL;
        counts = cn->json;
    }
    return ak0_chunked(c, cs, counts, depth);
}

/* A call node: the function it names (awkward0.* and awkward.* alike) evaluated, its
 * arguments first, into the value it makes. */
static val *eval_call(interp *c, json_t *j, int depth) {
    json_t *spec = json_object_get(j, "call");
    char name[200] = "";
    size_t pos = 0;
    for (size_t i = 0; i < json_array_size(spec) && pos < sizeof name; i++)
        pos += (size_t)snprintf(name + pos, sizeof name - pos, "%s%s", i ? "." : "",
                                json_string_value(json_array_get(spec, i)));
    const char *n = strncmp(name, "awkward0.", 9) == 0  ? name + 9
                    : strncmp(name, "awkward.", 8) == 0 ? name + 8
                                                        : name;
    if (strcmp(n, "numpy.frombuffer") == 0 || strcmp(name, "numpy.frombuffer") == 0 ||
        strcmp(n, "util.frombuffer") == 0)
        return frombuffer(c, j, depth);
    if (strcmp(name, "zlib.decompress") == 0) {
        val *b = bytes_arg(c, j, depth);
        return b ? ak0_inflate(c, b) : NULL;
    }
    if (strcmp(name, "lzma.decompress") == 0 || strcmp(name, "backports.lzma.decompress") == 0) {
        val *b = bytes_arg(c, j, depth);
        return b ? ak0_unxz(c, b) : NULL;
    }
    if (strcmp(name, "lz4.block.decompress") == 0) {
        val *b = bytes_arg(c, j, depth);
        return b ? ak0_unlz4(c, b) : NULL;
    }
    if (strcmp(n, "JaggedArray.fromcounts") == 0 || strcmp(n, "JaggedArray.fromoffsets") == 0) {
        val *cn = ak0_want(c, ak0_arg(c, j, 0, depth), V_ARRAY, "JaggedArray's counts or offsets");
        val *ct =
            cn ? ak0_want(c, ak0_arg(c, j, 1, depth), V_ARRAY, "JaggedArray's content") : NULL;
        return ct ? ak0_list_offsets(c, cn, ct, NULL, NULL, n[16] == 'o') : NULL;
    }
    if (strcmp(n, "StringArray.fromcounts") == 0 || strcmp(n, "StringArray.fromoffsets") == 0) {
        bool given = n[16] == 'o';
        val *cn = ak0_want(c, ak0_arg(c, j, 0, depth), V_ARRAY, "StringArray's counts");
        val *ct =
            cn ? ak0_want(c, ak0_arg(c, j, 1, depth), V_ARRAY, "StringArray's content") : NULL;
        val *enc = ct ? ak0_arg(c, j, 2, depth) : NULL;
        if (!enc) return NULL;
        if (!ct->dt || strcmp(ct->dt->prim, "uint8") != 0 || ct->dt->inner != 1) {
            ak0_not_read(c, "a StringArray whose content is not bytes");
            return NULL;
        }
        bool utf8 = enc->kind == V_JSON && json_is_string(enc->json);
        return ak0_list_offsets(c, cn, ct,
                                json_pack("{s:s}", "__array__", utf8 ? "string" : "bytestring"),
                                json_pack("{s:s}", "__array__", utf8 ? "char" : "byte"), given);
    }
    if (strcmp(n, "JaggedArray") == 0) {
        val *s = ak0_want(c, ak0_arg(c, j, 0, depth), V_ARRAY, "JaggedArray's starts");
        val *e = s ? ak0_want(c, ak0_arg(c, j, 1, depth), V_ARRAY, "JaggedArray's stops") : NULL;
        val *ct = e ? ak0_want(c, ak0_arg(c, j, 2, depth), V_ARRAY, "JaggedArray's content") : NULL;
        int64_t *sv = ct ? ak0_ints_of(c, s, "starts") : NULL;
        int64_t *ev = sv ? ak0_ints_of(c, e, "stops") : NULL;
        if (!ev) {
            free(sv);
            return NULL;
        }
        if (e->length < s->length) {
            free(sv);
            free(ev);
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: fewer stops than starts");
            return NULL;
        }
        ak0_drop_buf(c, s->buf);
        ak0_drop_buf(c, e->buf);
        char key[32];
        ak0_next_key(c, key, sizeof key);
        if (ak0_int64_buf(c, key, "starts", sv, s->length) < 0 ||
            ak0_int64_buf(c, key, "stops", ev, s->length) < 0)
            return NULL;
        json_t *f = ak0_form_node("ListArray", key);
        if (!f) return ak0_array_val(c, NULL, 0);
        json_object_set_new(f, "starts", json_string("i64"));
        json_object_set_new(f, "stops", json_string("i64"));
        json_object_set_new(f, "content", ct->form);
        ct->form = NULL;
        return ak0_array_val(c, f, s->length);
    }
    if (strcmp(n, "Table.frompairs") == 0) {
        val *pairs = ak0_want(c, ak0_arg(c, j, 0, depth), V_LIST, "Table's pairs");
        if (!pairs) return NULL;
        json_t *args = json_object_get(j, "args");
        if (json_array_size(args) > 1) {
            val *rs = ak0_want(c, ak0_arg(c, j, 1, depth), V_JSON, "Table's rowstart");
            if (!rs) return NULL;
            if (ak0_json_int_or(rs->json, -1) != 0) {
                ak0_not_read(c, "a Table view that does not start at row 0");
                return NULL;
            }
        }
        char key[32];
        ak0_next_key(c, key, sizeof key);
        json_t *f = ak0_form_node("RecordArray", key), *fields = json_array(),
               *contents = json_array();
        uint64_t length = UINT64_MAX;
        for (size_t i = 0; f && fields && contents && i < pairs->nitems; i++) {
            val *p = pairs->items[i], *col = NULL;
            bool pair = p->kind == V_LIST && p->nitems == 2 && p->items[0]->kind == V_JSON &&
                        json_is_string(p->items[0]->json) && p->items[1]->kind == V_ARRAY;
            if (!pair)
                h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                           "awkward0 schema: a Table column is not a (name, array) pair");
            if (!pair || !(col = ak0_take(c, p->items[1]))) {
                json_decref(f);
                json_decref(fields);
                json_decref(contents);
                return NULL;
            }
            json_array_append_new(fields, json_string(json_string_value(p->items[0]->json)));
            json_array_append_new(contents, col->form);
            col->form = NULL;
            if (col->length < length) length = col->length;
        }
        if (!f || !fields || !contents) {
            json_decref(f);
            json_decref(fields);
            json_decref(contents);
            ak0_oom(c);
            return NULL;
        }
        /* columns "0", "1", ... in order are a tuple, as awkward0 names a tuple's */
        bool tuple = json_array_size(fields) > 0;
        for (size_t i = 0; tuple && i < json_array_size(fields); i++) {
            char num[32];
            snprintf(num, sizeof num, "%zu", i);
            tuple = strcmp(json_string_value(json_array_get(fields, i)), num) == 0;
        }
        if (tuple) {
            json_decref(fields);
            fields = json_null();
        }
        json_object_set_new(f, "fields", fields);
        json_object_set_new(f, "contents", contents);
        return ak0_array_val(c, f, length == UINT64_MAX ? 0 : length);
    }
    if (strcmp(n, "Table.fromview") == 0) {
        val *view = ak0_want(c, ak0_arg(c, j, 0, depth), V_LIST, "Table's view");
        val *t =
            view ? ak0_want(c, ak0_arg(c, j, 1, depth), V_ARRAY, "Table.fromview's table") : NULL;
        if (!t) return NULL;
        bool whole = view->nitems == 3 && view->items[0]->kind == V_JSON &&
                     view->items[1]->kind == V_JSON && view->items[2]->kind == V_JSON &&
                     ak0_json_int_or(view->items[0]->json, -1) == 0 &&
                     ak0_json_int_or(view->items[1]->json, -1) == 1 &&
                     ak0_json_int_or(view->items[2]->json, -1) == (int64_t)t->length;
        if (!whole) {
            ak0_not_read(c, "a Table view of part of its rows");
            return NULL;
        }
        t->used = false; /* passed through whole */
        return t;
    }
    if (strcmp(n, "MaskedArray") == 0 || strcmp(n, "BitMaskedArray") == 0) {
        bool bit = n[0] == 'B';
        val *m = ak0_want(c, ak0_arg(c, j, 0, depth), V_ARRAY, "the mask");
        val *ct = m ? ak0_want(c, ak0_arg(c, j, 1, depth), V_ARRAY, "the content") : NULL;
        if (!ct) return NULL;
        json_t *args = json_object_get(j, "args");
        bool maskedwhen = true, lsb = true;
        if (json_array_size(args) > 2) {
            val *mw = ak0_want(c, ak0_arg(c, j, 2, depth), V_JSON, "maskedwhen");
            if (!mw) return NULL;
            maskedwhen = json_is_true(mw->json);
        }
        if (bit && json_array_size(args) > 3) {
            val *lo = ak0_want(c, ak0_arg(c, j, 3, depth), V_JSON, "lsborder");
            if (!lo) return NULL;
            lsb = json_is_true(lo->json);
        }
        if (!m->dt || m->dt->itemsize != 1 || m->dt->inner != 1) {
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a mask must be bytes");
            return NULL;
        }
        uint64_t length = bit ? ct->length : m->length;
        uint64_t mbytes = bit ? (length + 7) / 8 : length;
        if (m->length < mbytes) {
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: the mask is too short");
            return NULL;
        }
        char key[32];
        ak0_next_key(c, key, sizeof key);
        unsigned char *mask = malloc(mbytes ? mbytes : 1);
        if (!mask) {
            ak0_oom(c);
            return NULL;
        }
        memcpy(mask, c->bufs[m->buf].data, mbytes);
        ak0_drop_buf(c, m->buf);
        if (ak0_add_buf(c, key, "mask", mask, mbytes) < 0) return NULL;
        json_t *f = ak0_form_node(bit ? "BitMaskedArray" : "ByteMaskedArray", key);
        if (!f) return ak0_array_val(c, NULL, 0);
        json_object_set_new(f, "mask", json_string(bit ? "u8" : "i8"));
        json_object_set_new(f, "valid_when", json_boolean(!maskedwhen));
        if (bit) json_object_set_new(f, "lsb_order", json_boolean(lsb));
        json_object_set_new(f, "content", ct->form);
        ct->form = NULL;
        return ak0_array_val(c, f, length);
    }
    if (strcmp(n, "IndexedArray") == 0 || strcmp(n, "IndexedMaskedArray") == 0) {
        bool opt = n[7] == 'M';
        val *x = ak0_want(c, ak0_arg(c, j, 0, depth), V_ARRAY, "the index");
        val *ct = x ? ak0_want(c, ak0_arg(c, j, 1, depth), V_ARRAY, "the content") : NULL;
        int64_t *iv = ct ? ak0_ints_of(c, x, "the index") : NULL;
        if (!iv) return NULL;
        ak0_drop_buf(c, x->buf);
        char key[32];
        ak0_next_key(c, key, sizeof key);
        if (ak0_int64_buf(c, key, "index", iv, x->length) < 0) return NULL;
        json_t *f = ak0_form_node(opt ? "IndexedOptionArray" : "IndexedArray", key);
        if (!f) return ak0_array_val(c, NULL, 0);
        json_object_set_new(f, "index", json_string("i64"));
        json_object_set_new(f, "content", ct->form);
        ct->form = NULL;
        return ak0_array_val(c, f, x->length);
    }
    if (strcmp(n, "ChunkedArray") == 0) return chunked(c, j, depth);
    if (strcmp(n, "UnionArray") == 0) { /* tags, index, contents as given */
        val *t = ak0_want(c, ak0_arg(c, j, 0, depth), V_ARRAY, "the tags");
        val *x = t ? ak0_want(c, ak0_arg(c, j, 1, depth), V_ARRAY, "the index") : NULL;
        val *cs = x ? ak0_want(c, ak0_arg(c, j, 2, depth), V_LIST, "the contents") : NULL;
        int64_t *tv = cs ? ak0_ints_of(c, t, "the tags") : NULL;
        int64_t *xv = tv ? ak0_ints_of(c, x, "the index") : NULL;
        int8_t *tags = xv ? malloc(t->length ? t->length : 1) : NULL;
        int rc = tags ? 0 : -1;
        if (xv && !tags) ak0_oom(c);
        if (rc == 0 && x->length < t->length)
            rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a short union index");
        for (uint64_t i = 0; rc == 0 && i < t->length; i++) {
            if (tv[i] < 0 || tv[i] >= (int64_t)cs->nitems || tv[i] > 126)
                rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                                "awkward0 schema: union tag %lld has no content", (long long)tv[i]);
            else
                tags[i] = (int8_t)tv[i];
        }
        free(tv);
        return ak0_union_val(c, rc, t, x, cs, tags, xv);
    }
    if (strcmp(n, "UnionArray.fromtags") == 0) {
        val *t = ak0_want(c, ak0_arg(c, j, 0, depth), V_ARRAY, "the tags");
        val *cs = t ? ak0_want(c, ak0_arg(c, j, 1, depth), V_LIST, "the contents") : NULL;
        int64_t *tv = cs ? ak0_ints_of(c, t, "the tags") : NULL;
        if (!tv) return NULL;
        int64_t *xv = malloc((t->length ? t->length : 1) * 8);
        int8_t *tags = malloc(t->length ? t->length : 1);
        int64_t seen[127] = {0};
        int rc = xv && tags ? 0 : ak0_oom(c);
        for (uint64_t i = 0; rc == 0 && i < t->length; i++) {
            if (tv[i] < 0 || tv[i] >= (int64_t)cs->nitems || tv[i] > 126)
                rc = h5ark_fail(c->err, H5ARK_SCHEMA_ERROR,
                                "awkward0 schema: union tag %lld has no content", (long long)tv[i]);
            else {
                tags[i] = (int8_t)tv[i];
                xv[i] = seen[tv[i]]++;
            }
        }
        free(tv);
        return ak0_union_val(c, rc, t, NULL, cs, tags, xv);
    }
    char what[260];
    snprintf(what, sizeof what, "the call %s", name);
    ak0_not_read(c, what);
    return NULL;
}

static val *eval(interp *c, json_t *j, int depth) {
    if (depth > AK0_MAX_DEPTH) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: nested deeper than %d levels",
                   AK0_MAX_DEPTH);
        return NULL;
    }
    val *v = NULL;
    if (json_is_array(j)) { /* a pair inside "pairs" */
        v = ak0_new_val(c, V_LIST);
        if (!v) return NULL;
        v->nitems = json_array_size(j);
        v->items = ak0_keep(c, calloc(v->nitems ? v->nitems : 1, sizeof *v->items));
        if (!v->items) {
            ak0_oom(c);
            return NULL;
        }
        for (size_t i = 0; i < v->nitems; i++) {
            json_t *x = json_array_get(j, i);
            if (json_is_string(x)) { /* a column name */
                val *s = ak0_new_val(c, V_JSON);
                if (!s) return NULL;
                s->json = x;
                v->items[i] = s;
            } else if (!(v->items[i] = eval(c, x, depth + 1))) {
                return NULL;
            }
        }
        return v;
    }
    if (!json_is_object(j)) {
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a node is not a JSON object");
        return NULL;
    }
    json_t *id = json_object_get(j, "id"), *x;
    if ((x = json_object_get(j, "ref"))) {
        for (size_t i = 0; i < c->nmemo; i++)
            if (json_is_integer(x) && c->memo[i].id == json_integer_value(x)) {
                if (!c->memo[i].v) {
                    ak0_not_read(c, "a cyclic (self-referencing) structure");
                    return NULL;
                }
                return c->memo[i].v;
            }
        h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a reference to no node");
        return NULL;
    }
    size_t slot = c->nmemo;
    if (json_is_integer(id)) { /* being evaluated: a reference to it now is a cycle */
        if (c->nmemo == c->capmemo) {
            size_t cap = c->capmemo ? 2 * c->capmemo : 32;
            void *n = realloc(c->memo, cap * sizeof *c->memo);
            if (!n) {
                ak0_oom(c);
                return NULL;
            }
            c->memo = n;
            c->capmemo = cap;
        }
        c->memo[c->nmemo].id = json_integer_value(id);
        c->memo[c->nmemo++].v = NULL;
    }
    if ((x = json_object_get(j, "json"))) {
        if ((v = ak0_new_val(c, V_JSON))) v->json = x;
    } else if ((x = json_object_get(j, "dtype"))) {
        v = dtype_val(c, x, depth + 1);
    } else if ((x = json_object_get(j, "read"))) {
        v = ak0_new_val(c, V_BYTES);
        if (v &&
            (!json_is_string(x) || c->blob(c->bctx, json_string_value(x), &v->bytes, &v->nbytes))) {
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: blob '%s' is missing",
                       json_is_string(x) ? json_string_value(x) : "?");
            return NULL;
        }
    } else if ((x = json_object_get(j, "list")) || (x = json_object_get(j, "tuple")) ||
               (x = json_object_get(j, "pairs"))) {
        if (!json_is_array(x)) {
            h5ark_fail(c->err, H5ARK_SCHEMA_ERROR, "awkward0 schema: a list is not an array");
            return NULL;
        }
        v = eval(c, x, depth + 1);
    } else if (json_object_get(j, "call")) {
        v = eval_call(c, j, depth);
    } else {
        const char *key = json_object_iter_key(json_object_iter(j));
        char what[120];
        snprintf(what, sizeof what, "a '%.60s' node", key ? key : "empty");
        ak0_not_read(c, what);
        return NULL;
    }
    if (v && json_is_integer(id)) c->memo[slot].v = v;
    return v;
}

void ak0_result_free(ak0_result *r) {
    registry_unreserve(r->reserved);
    for (size_t i = 0; i < r->n; i++) {
        free(r->names[i]);
        free(r->data[i]);
    }
    free(r->names);
    free(r->data);
    free(r->nbytes);
    free(r->form);
    memset(r, 0, sizeof *r);
}

int ak0_interpret(const char *json, size_t len, ak0_blob_fn blob, void *bctx, ak0_result *out,
                  h5ark_error *err) {
    memset(out, 0, sizeof *out);
    json_t *root = ak0_load(json, len, err);
    if (!root) return -1;
    interp c = {.blob = blob, .bctx = bctx, .err = err, .owned = json_array()};
    val *v = c.owned ? eval(&c, json_object_get(root, "schema"), 1) : NULL;
    if (!c.owned) h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    int rc = v ? 0 : -1;
    if (v && v->kind != V_ARRAY)
        rc = h5ark_fail(err, H5ARK_SCHEMA_ERROR, "awkward0 schema: it makes no array");
    if (rc == 0 && (!(out->form = json_dumps(v->form, JSON_COMPACT))))
        rc = h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
    if (rc == 0) {
        out->length = v->length;
        out->names = calloc(c.nbufs + 1, sizeof *out->names);
        out->data = calloc(c.nbufs + 1, sizeof *out->data);
        out->nbytes = calloc(c.nbufs + 1, sizeof *out->nbytes);
        if (!out->names || !out->data || !out->nbytes) rc = ak0_oom(&c);
        for (size_t i = 0; rc == 0 && i < c.nbufs; i++) {
            if (!c.bufs[i].out) continue;
            if (!(out->names[out->n] = strdup(c.bufs[i].name))) {
                rc = ak0_oom(&c);
                break;
            }
            out->data[out->n] = c.bufs[i].data;
            out->nbytes[out->n++] = c.bufs[i].nbytes;
            out->reserved += c.bufs[i].nbytes;
            c.bufs[i].data = NULL;
        }
    }
    /* forms of values never given to a parent (the root's, dumped), then the values */
    for (size_t i = 0; i < c.nvals; i++) {
        json_decref(c.vals[i]->form);
        json_decref(c.vals[i]->given);
        free(c.vals[i]);
    }
    free(c.vals);
    for (size_t i = 0; i < c.nbufs; i++)
        free(c.bufs[i].data);
    free(c.bufs);
    free(c.memo);
    for (size_t i = 0; i < c.nallocs; i++)
        free(c.allocs[i]);
    free(c.allocs);
    json_decref(c.owned);
    json_decref(root);
    registry_unreserve(c.reserved - out->reserved); /* the result's are freed with it */
    if (rc) ak0_result_free(out);
    return rc;
}
