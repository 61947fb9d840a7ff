/* libFuzzer target: pack's parsers on untrusted text. The input is two NUL-separated
 * YAML schemas, merged and grouped as pack merges them, each field transformed over a
 * buffer of the rest of the bytes; and the whole input as an LBANN sample list. */
#include "lbann/lbann.h"

#include <stdlib.h>
#include <string.h>

static void fields(const char *data, size_t dlen, const char *exp, size_t elen, const uint8_t *tail,
                   size_t tlen) {
    h5ark_value *d = NULL, *e = NULL, *warnings = h5ark_value_array();
    h5ark_error err = {0};
    lbann_fields f = {0};
    lbann_groups g = {0};
    if (lbann_yaml_parse(data, dlen, "data_schema", &d, &err) == 0 &&
        (!exp || lbann_yaml_parse(exp, elen, "experiment_schema", &e, &err) == 0) &&
        lbann_fields_make(d, e, &f, warnings, &err) == 0 && lbann_groups_make(&f, &g, &err) == 0) {
        /* the transforms over a field of up to 64 float64, as the first sample sets it */
        double src[64], dst[64], tmp[64];
        size_t n = tlen / 8 > 64 ? 64 : tlen / 8;
        memcpy(src, tail, n * 8);
        for (size_t i = 0; i < f.n; i++) {
            uint64_t dims[34];
            if (lbann_field_check(&f.v[i], n, &err) == 0) {
                lbann_field_transform(&f.v[i], src, H5ARK_FLOAT64, n, dst, tmp);
                lbann_field_dims(&f.v[i], n, dims);
            }
        }
    }
    lbann_groups_free(&g);
    lbann_fields_free(&f);
    h5ark_value_destroy(&d);
    h5ark_value_destroy(&e);
    h5ark_value_destroy(&warnings);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *text = (const char *)data;
    const char *nul = memchr(text, '\0', size);
    size_t dlen = nul ? (size_t)(nul - text) : size;
    const char *exp = nul ? nul + 1 : NULL;
    const char *nul2 = exp ? memchr(exp, '\0', size - dlen - 1) : NULL;
    size_t elen = exp ? (nul2 ? (size_t)(nul2 - exp) : size - dlen - 1) : 0;
    const uint8_t *tail = nul2 ? (const uint8_t *)nul2 + 1 : NULL;
    size_t tlen = tail ? size - (size_t)(tail - data) : 0;
    fields(text, dlen, exp, elen, tail, tlen);
    lbann_sample_list l;
    h5ark_error err = {0};
    if (lbann_sample_list_parse(text, size, "sample list", &l, &err) == 0)
        lbann_sample_list_free(&l);
    return 0;
}
