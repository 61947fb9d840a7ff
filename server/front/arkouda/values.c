/* Values in Arkouda's terms (see values.h). */
#include "front/arkouda/values.h"
#include "front/arkouda/commands.h"
#include "locales.h"
#include "dist/ranks.h"
#include "registry.h"

#include "objects/strings.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOAD(T, base, i) (((const T *)(base))[i])

void ak_value_text(h5ark_dtype t, const void *b, uint64_t i, char *out, size_t n) {
    if (t == H5ARK_BOOLEAN) {
        snprintf(out, n, "%s", LOAD(uint8_t, b, i) ? "True" : "False");
    } else if (elem_is_float(t)) {
        double v = elem_load_f(b, t, i);
        /* the shortest text that reads back as the same double */
        for (int p = 1; p <= 17; p++) {
            snprintf(out, n, "%.*g", p, v);
            if (isnan(v) || strtod(out, NULL) == v) break;
        }
        if (isnan(v))
            snprintf(out, n, "nan");
        else if (isinf(v))
            snprintf(out, n, "%s", v < 0 ? "-inf" : "inf");
    } else if (elem_is_unsigned(t)) {
        snprintf(out, n, "%" PRIu64, elem_load_u(b, t, i));
    } else {
        snprintf(out, n, "%" PRId64, elem_load_i(b, t, i));
    }
}

void ak_scalar_text(h5ark_dtype t, const void *b, uint64_t i, char *out, size_t n) {
    char v[64];
    if (t == H5ARK_BOOLEAN)
        snprintf(v, sizeof v, "%s", LOAD(uint8_t, b, i) ? "true" : "false");
    else
        ak_value_text(t, b, i, v, sizeof v);
    snprintf(out, n, "%s %s", h5ark_dtype_name(t), v);
}

int ak_scalar_parse(h5ark_dtype t, const char *text, const char *key, void *out, h5ark_error *err) {
    bool ok;
    if (t == H5ARK_BOOLEAN) {
        bool v = strcmp(text, "True") == 0 || strcmp(text, "true") == 0 || strcmp(text, "1") == 0;
        ok =
            v || strcmp(text, "False") == 0 || strcmp(text, "false") == 0 || strcmp(text, "0") == 0;
        elem_store_i(out, t, 0, v);
    } else if (elem_is_float(t)) {
        double v;
        ok = ak_parse_double(text, &v);
        elem_store_f(out, t, 0, v);
    } else if (elem_is_unsigned(t)) {
        uint64_t v;
        ok = ak_parse_uint(text, &v);
        elem_store_u(out, t, 0, v);
    } else {
        int64_t v;
        ok = ak_parse_int(text, &v);
        elem_store_i(out, t, 0, v);
    }
    return ok ? 0
              : h5ark_fail(err, H5ARK_BAD_REQUEST, "argument '%s' is not a %s: '%.60s'", key,
                           h5ark_dtype_name(t), text);
}
