/* h5ark, the command-line tool: printing values, sizes and tables (see cli.h). */
#include "cli.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>

void print_warnings(const h5ark_value *warnings) {
    for (size_t i = 0; i < h5ark_value_len(warnings); i++) {
        const h5ark_value *w = h5ark_value_at(warnings, i);
        if (w && w->kind == H5ARK_STR) fprintf(stderr, "h5ark: warning: %s\n", w->as.s.ptr);
    }
}

void sb_putn(strbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            fputs("h5ark: resource_limit: out of memory\n", stderr);
            exit(EXIT_FAILURE);
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void sb_puts(strbuf *b, const char *s) {
    sb_putn(b, s, strlen(s));
}

void sb_printf(strbuf *b, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof tmp) {
        sb_putn(b, tmp, (size_t)n);
        return;
    }
    char *big = malloc((size_t)n + 1);
    if (!big) return;
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    sb_putn(b, big, (size_t)n);
    free(big);
}

char *sb_take(strbuf *b) {
    if (!b->p) sb_putn(b, "", 0);
    char *p = b->p;
    memset(b, 0, sizeof *b);
    return p;
}

/* A string quoted for reading back: valid UTF-8 passes through, quotes, backslashes, control
 * characters and invalid bytes are escaped. */
void sb_quote(strbuf *b, const char *s, size_t n) {
    sb_putn(b, "\"", 1);
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            sb_putn(b, e, 2);
            i++;
        } else if (c == '\n') {
            sb_puts(b, "\\n"), i++;
        } else if (c == '\t') {
            sb_puts(b, "\\t"), i++;
        } else if (c == '\r') {
            sb_puts(b, "\\r"), i++;
        } else if (c < 0x20 || c == 0x7f) {
            sb_printf(b, "\\u%04x", c), i++;
        } else if (c < 0x80) {
            sb_putn(b, s + i, 1), i++;
        } else {
            /* the length of a well-formed UTF-8 sequence starting here, or 0 */
            size_t len = c >= 0xc2 && c <= 0xdf   ? 2
                         : c >= 0xe0 && c <= 0xef ? 3
                         : c >= 0xf0 && c <= 0xf4 ? 4
                                                  : 0;
            bool ok = len && i + len <= n;
            for (size_t k = 1; ok && k < len; k++)
                ok = ((unsigned char)s[i + k] & 0xc0) == 0x80;
            if (ok && len == 3) {
                unsigned char c1 = (unsigned char)s[i + 1];
                ok = !(c == 0xe0 && c1 < 0xa0) && !(c == 0xed && c1 >= 0xa0);
            } else if (ok && len == 4) {
                unsigned char c1 = (unsigned char)s[i + 1];
                ok = !(c == 0xf0 && c1 < 0x90) && !(c == 0xf4 && c1 >= 0x90);
            }
            if (ok) {
                sb_putn(b, s + i, len);
                i += len;
            } else {
                sb_printf(b, "\\x%02x", c);
                i++;
            }
        }
    }
    sb_putn(b, "\"", 1);
}

/* The shortest decimal that reads back as the same float. */
void sb_float(strbuf *b, double v, bool single) {
    if (isnan(v)) return sb_puts(b, "nan");
    if (isinf(v)) return sb_puts(b, v < 0 ? "-inf" : "inf");
    char tmp[64];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        double back = strtod(tmp, NULL);
        if (single ? (float)back == (float)v : back == v) break;
    }
    /* keep floats recognisable as floats */
    if (!strpbrk(tmp, ".eninf")) strcat(tmp, ".0");
    sb_puts(b, tmp);
}

/* An array's or a map's element: a string quoted, the rest as sb_value prints them. */
static void sb_item(strbuf *b, const h5ark_value *item) {
    if (item && item->kind == H5ARK_STR)
        sb_quote(b, item->as.s.ptr, item->as.s.len);
    else
        sb_value(b, item);
}

/* A value as compact JSON-like text (for configuration values and attributes). */
void sb_value(strbuf *b, const h5ark_value *v) {
    if (!v) return sb_puts(b, "-");
    switch (v->kind) {
    case H5ARK_NIL: sb_puts(b, "nil"); break;
    case H5ARK_BOOL: sb_puts(b, v->as.b ? "true" : "false"); break;
    case H5ARK_INT: sb_printf(b, "%" PRId64, v->as.i); break;
    case H5ARK_UINT: sb_printf(b, "%" PRIu64, v->as.u); break;
    case H5ARK_FLOAT: sb_float(b, v->as.f, false); break;
    case H5ARK_STR: sb_putn(b, v->as.s.ptr, v->as.s.len); break;
    case H5ARK_BIN: sb_printf(b, "<%zu bytes>", v->as.s.len); break;
    case H5ARK_ARRAY:
        sb_puts(b, "[");
        for (size_t i = 0; i < v->as.a.len; i++) {
            if (i) sb_puts(b, ", ");
            sb_item(b, v->as.a.items[i]);
        }
        sb_puts(b, "]");
        break;
    case H5ARK_MAP:
        sb_puts(b, "{");
        for (size_t i = 0; i < v->as.m.len; i++) {
            if (i) sb_puts(b, ", ");
            sb_quote(b, v->as.m.keys[i], strlen(v->as.m.keys[i]));
            sb_puts(b, ": ");
            sb_item(b, v->as.m.vals[i]);
        }
        sb_puts(b, "}");
        break;
    }
}

char *value_text(const h5ark_value *v) {
    strbuf b = {0};
    if (!v || v->kind == H5ARK_NIL)
        sb_puts(&b, "-");
    else
        sb_value(&b, v);
    return sb_take(&b);
}

char *bytes_text(uint64_t n) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    strbuf b = {0};
    if (n < 1024) {
        sb_printf(&b, "%" PRIu64 " B", n);
    } else {
        double v = (double)n;
        int u = 0;
        while (v >= 1024 && u < 5)
            v /= 1024, u++;
        sb_printf(&b, "%.1f %s", v, units[u]);
    }
    return sb_take(&b);
}

/* "N unit": bytes in binary units, rows and files as counts. */
char *amount_text(uint64_t n, const char *unit) {
    if (strcmp(unit, "bytes") == 0) return bytes_text(n);
    strbuf b = {0};
    sb_printf(&b, "%" PRIu64 " %s", n, unit);
    return sb_take(&b);
}

void table_add(table *t, char **row) {
    if (t->rows == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        char **cells = realloc(t->cells, t->cap * (size_t)t->ncols * sizeof *cells);
        if (!cells) {
            fputs("h5ark: resource_limit: out of memory\n", stderr);
            exit(EXIT_FAILURE);
        }
        t->cells = cells;
    }
    memcpy(t->cells + t->rows * (size_t)t->ncols, row, (size_t)t->ncols * sizeof *row);
    t->rows++;
}

/* Display width: code points, which is right for the common scripts. */
static size_t text_width(const char *s) {
    size_t w = 0;
    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

void table_print(table *t) {
    size_t width[MAX_COLS];
    for (int c = 0; c < t->ncols; c++) {
        width[c] = text_width(t->heads[c]);
        for (size_t r = 0; r < t->rows; r++) {
            size_t w = text_width(t->cells[r * (size_t)t->ncols + (size_t)c]);
            if (w > width[c]) width[c] = w;
        }
    }
    for (size_t r = 0; r <= t->rows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *s = r == 0 ? t->heads[c] : t->cells[(r - 1) * (size_t)t->ncols + (size_t)c];
            bool last = c == t->ncols - 1;
            fputs(s, stdout);
            if (!last)
                for (size_t k = text_width(s); k < width[c] + 2; k++)
                    putchar(' ');
        }
        putchar('\n');
    }
}

void table_free(table *t) {
    for (size_t i = 0; i < t->rows * (size_t)t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
}

char *field_text(const h5ark_value *obj, const char *key) {
    return value_text(h5ark_value_get(obj, key));
}

char *nbytes_text(const h5ark_value *obj) {
    uint64_t n;
    if (h5ark_value_to_uint64(h5ark_value_get(obj, "nbytes"), &n)) return bytes_text(n);
    return value_text(NULL);
}

void objects_table_init(table *t, bool with_dataset) {
    static const char *const heads[] = {"NAME", "OBJTYPE", "DTYPE", "SIZE", "SHAPE", "NBYTES"};
    memset(t, 0, sizeof *t);
    if (with_dataset) t->heads[t->ncols++] = "DATASET";
    for (size_t i = 0; i < sizeof heads / sizeof *heads; i++)
        t->heads[t->ncols++] = heads[i];
}

void objects_table_add(table *t, const char *dataset, const h5ark_value *obj) {
    char *row[MAX_COLS];
    int c = 0;
    if (dataset) row[c++] = strdup(dataset);
    row[c++] = field_text(obj, "name");
    row[c++] = field_text(obj, "objtype");
    row[c++] = field_text(obj, "dtype");
    row[c++] = field_text(obj, "size");
    row[c++] = field_text(obj, "shape");
    row[c++] = nbytes_text(obj);
    table_add(t, row);
}

/* The element at p as a T (p may be unaligned), printed with fmt. */
#define PRINT_AS(T, fmt)                                                                           \
    do {                                                                                           \
        T v_;                                                                                      \
        memcpy(&v_, p, sizeof v_);                                                                 \
        sb_printf(b, fmt, v_);                                                                     \
    } while (0)

void print_element(strbuf *b, const h5ark_data *d, uint64_t i) {
    const char *p = (const char *)d->values + i * h5ark_dtype_size(d->dtype);
    b->len = 0;
    switch (d->dtype) {
    case H5ARK_INT8: PRINT_AS(int8_t, "%" PRId8); break;
    case H5ARK_UINT8: PRINT_AS(uint8_t, "%" PRIu8); break;
    case H5ARK_INT16: PRINT_AS(int16_t, "%" PRId16); break;
    case H5ARK_UINT16: PRINT_AS(uint16_t, "%" PRIu16); break;
    case H5ARK_INT32: PRINT_AS(int32_t, "%" PRId32); break;
    case H5ARK_UINT32: PRINT_AS(uint32_t, "%" PRIu32); break;
    case H5ARK_INT64: PRINT_AS(int64_t, "%" PRId64); break;
    case H5ARK_UINT64: PRINT_AS(uint64_t, "%" PRIu64); break;
    case H5ARK_FLOAT32: {
        float v;
        memcpy(&v, p, sizeof v);
        sb_float(b, v, true);
        break;
    }
    case H5ARK_FLOAT64: {
        double v;
        memcpy(&v, p, sizeof v);
        sb_float(b, v, false);
        break;
    }
    case H5ARK_BOOLEAN: sb_puts(b, *p ? "true" : "false"); break;
    case H5ARK_STRING: {
        size_t len;
        const char *s = h5ark_data_string(d, i, &len);
        sb_quote(b, s, len);
        break;
    }
    default: sb_puts(b, "?"); break;
    }
}
