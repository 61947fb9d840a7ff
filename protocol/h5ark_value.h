/* A small dynamically typed value (nil, bool, int, uint, float, str, bin, array, map) that
 * mirrors MessagePack. Request and reply headers are decoded into it and built from it, so
 * the daemon and the C client read and write headers through one API. */
#ifndef H5ARK_VALUE_H
#define H5ARK_VALUE_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    H5ARK_NIL,
    H5ARK_BOOL,
    H5ARK_INT,  /* negative integers (and any int built with h5ark_value_int) */
    H5ARK_UINT, /* non-negative integers as MessagePack decodes them */
    H5ARK_FLOAT,
    H5ARK_STR,
    H5ARK_BIN,
    H5ARK_ARRAY,
    H5ARK_MAP
} h5ark_kind;

typedef struct h5ark_value h5ark_value;

struct h5ark_value {
    h5ark_kind kind;
    union {
        bool b;
        int64_t i;
        uint64_t u;
        double f;
        struct {
            char *ptr; /* NUL-terminated copy; len excludes the NUL */
            size_t len;
        } s; /* STR and BIN */
        struct {
            h5ark_value **items;
            size_t len, cap;
        } a;
        struct {
            char **keys;
            h5ark_value **vals;
            size_t len, cap;
        } m;
    } as;
};

/* Constructors return NULL only when memory is exhausted. */
h5ark_value *h5ark_value_nil(void);
h5ark_value *h5ark_value_bool(bool b);
h5ark_value *h5ark_value_int(int64_t i);
h5ark_value *h5ark_value_uint(uint64_t u);
h5ark_value *h5ark_value_float(double f);
h5ark_value *h5ark_value_str(const char *s);
h5ark_value *h5ark_value_strn(const char *s, size_t len);
h5ark_value *h5ark_value_bin(const void *p, size_t len);
h5ark_value *h5ark_value_array(void);
h5ark_value *h5ark_value_map(void);
void h5ark_value_destroy(h5ark_value **self);

/* Containers take ownership of the child, also on failure (a NULL child fails), so a
 * constructor can be passed straight in: h5ark_value_set(m, "k", h5ark_value_int(1)). */
int h5ark_value_push(h5ark_value *array, h5ark_value *item);
int h5ark_value_set(h5ark_value *map, const char *key, h5ark_value *val);

/* Lookups. h5ark_value_get returns NULL when self is not a map or the key is absent. */
h5ark_value *h5ark_value_get(const h5ark_value *map, const char *key);
size_t h5ark_value_len(const h5ark_value *v); /* items of an array, pairs of a map */
h5ark_value *h5ark_value_at(const h5ark_value *array, size_t i);

/* Typed reads: true when v holds a value representable in the requested type. */
bool h5ark_value_to_int64(const h5ark_value *v, int64_t *out);
bool h5ark_value_to_uint64(const h5ark_value *v, uint64_t *out);
bool h5ark_value_to_double(const h5ark_value *v, double *out); /* ints convert too */
bool h5ark_value_is_integer(const h5ark_value *v);
bool h5ark_value_is_number(const h5ark_value *v);
const char *h5ark_value_kind_name(h5ark_kind kind);

/* MessagePack conversion. from_msgpack fails (NULL) on non-string map keys or no memory. */
h5ark_value *h5ark_value_from_msgpack(const msgpack_object *o);
int h5ark_value_pack(const h5ark_value *v, msgpack_packer *pk);
/* Decode one MessagePack value occupying exactly [data, data+len). NULL with a reason. */
h5ark_value *h5ark_value_decode(const void *data, size_t len, const char **why);
/* Encode into a malloc'd buffer (caller frees). */
int h5ark_value_encode(const h5ark_value *v, char **data, size_t *len);
h5ark_value *h5ark_value_copy(const h5ark_value *v);

#endif
