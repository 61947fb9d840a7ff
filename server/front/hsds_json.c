/* JSON text of the HSDS endpoint's answers, and the base64 of Basic credentials. */
#include "front/hsds_json.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char *p;
    size_t len, cap;
    bool failed;
} text;

static void put(text *t, const char *s, size_t n) {
    if (t->failed) return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *p = realloc(t->p, cap);
        if (!p) {
            t->failed = true;
            return;
        }
        t->p = p;
        t->cap = cap;
    }
    memcpy(t->p + t->len, s, n);
    t->len += n;
    t->p[t->len] = '\0';
}

static void put_str(text *t, const char *s, size_t n) {
    put(t, "\"", 1);
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        put(t, s + run, i - run);
        char esc[8];
        if (c == '"' || c == '\\')
            snprintf(esc, sizeof esc, "\\%c", c);
        else
            snprintf(esc, sizeof esc, "\\u%04x", c);
        put(t, esc, strlen(esc));
        run = i + 1;
    }
    put(t, s + run, n - run);
    put(t, "\"", 1);
}

/* The shortest text that reads back as d, always with a '.' or an exponent (a float). */
static void put_double(text *t, double d) {
    char num[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(num, sizeof num, "%.*g", prec, d);
        if (strtod(num, NULL) == d) break;
    }
    if (!strpbrk(num, ".e")) strcat(num, ".0");
    put(t, num, strlen(num));
}

static void emit(text *t, const h5ark_value *v) {
    char num[40];
    switch (v->kind) {
    case H5ARK_NIL: put(t, "null", 4); break;
    case H5ARK_BOOL: v->as.b ? put(t, "true", 4) : put(t, "false", 5); break;
    case H5ARK_INT:
        put(t, num, (size_t)snprintf(num, sizeof num, "%lld", (long long)v->as.i));
        break;
    case H5ARK_UINT:
        put(t, num, (size_t)snprintf(num, sizeof num, "%llu", (unsigned long long)v->as.u));
        break;
    case H5ARK_FLOAT: {
        double d = v->as.f;
        if (isnan(d))
            put(t, "NaN", 3);
        else if (isinf(d))
            d > 0 ? put(t, "Infinity", 8) : put(t, "-Infinity", 9);
        else
            put_double(t, d);
        break;
    }
    case H5ARK_STR: put_str(t, v->as.s.ptr, v->as.s.len); break;
    case H5ARK_ARRAY:
        put(t, "[", 1);
        for (size_t i = 0; i < v->as.a.len; i++) {
            if (i) put(t, ",", 1);
            emit(t, v->as.a.items[i]);
        }
        put(t, "]", 1);
        break;
    case H5ARK_MAP:
        put(t, "{", 1);
        for (size_t i = 0; i < v->as.m.len; i++) {
            if (i) put(t, ",", 1);
            put_str(t, v->as.m.keys[i], strlen(v->as.m.keys[i]));
            put(t, ":", 1);
            emit(t, v->as.m.vals[i]);
        }
        put(t, "}", 1);
        break;
    default: put(t, "null", 4); break;
    }
}

char *hsds_json_text(const h5ark_value *v, size_t *len) {
    text t = {0};
    emit(&t, v);
    if (t.failed) {
        free(t.p);
        return NULL;
    }
    *len = t.len;
    return t.p;
}

static int sextet(char c) {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

long hsds_base64_decode(const char *in, char *out, size_t outlen) {
    size_t n = strlen(in), o = 0;
    while (n && in[n - 1] == '=')
        n--;
    if (n % 4 == 1) return -1;
    unsigned acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int s = sextet(in[i]);
        if (s < 0) return -1;
        acc = (acc << 6) | (unsigned)s;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (o + 1 >= outlen) return -1;
            out[o++] = (char)((acc >> bits) & 0xff);
        }
    }
    out[o] = '\0';
    return (long)o;
}
