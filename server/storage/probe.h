/* The probe of a readhdf's files: what it is asked (read_probe_request), what it finds (a
 * read tree per object, and each file that failed), and its encoding between the probe
 * processes and the daemon (read_probe.c). */
#ifndef H5ARK_STORAGE_PROBE_H
#define H5ARK_STORAGE_PROBE_H

#include "sample_chunks.h"
#include "schema.h"

/* Probing opens the files with HDF5 and decodes their metadata, the part of the library
 * that damaged files can crash, so it runs in the file probe processes (sandbox.c), several
 * at once over slices of the file list; the daemon gets back what they found and only moves
 * the data. Without probes it runs in process. */
typedef struct read_probe_request {
    char *const *paths; /* absolute */
    const int *index;   /* each path's index in the request's file list (NULL: 0, 1, ...) */
    size_t npaths;
    const char *const *datasets; /* NULL/0: every top-level object of the first readable file */
    size_t ndatasets;
    bool allow_errors;
    bool calc_offsets;
    const h5ark_value *ak0_whitelist; /* awkward0's allow-list when the request gives one */
    /* told before each file is probed (the probe process reports how far it got) */
    void (*progress)(size_t k, const char *path);
} read_probe_request;

typedef struct {
    int index; /* in the request's file list */
    h5ark_code code;
    char *message;
} read_file_error;

typedef struct read_probe {
    h5u_names names;  /* the objects */
    read_node *nodes; /* one per name */
    read_file_error *errors;
    size_t nerrors, errcap;
    h5u_names warnings; /* what was skipped, reading whole files */
    h5u_names skipped;  /* the first file's objects left out (not sent on) */
    bool stopped;       /* a file failed without allow_errors: the last error says which */
} read_probe;

/* Probe the files in order; -1 only when out of memory (file failures are in out->errors). */
int read_probe_files(const read_probe_request *rq, read_probe *out, h5ark_error *err);
int read_probe_add_error(read_probe *p, int index, h5ark_code code, const char *message,
                         h5ark_error *err);
void read_probe_clear(read_probe *p);
/* As MessagePack, between the probe and the daemon. Decoding checks every file index
 * against npaths and points each source at paths[index]. */
h5ark_value *read_probe_encode(const read_probe *p);
int read_probe_decode(const h5ark_value *v, char *const *paths, size_t npaths, read_probe *p,
                      h5ark_error *err);
h5ark_value *read_probe_request_encode(const read_probe_request *rq);
/* Append what b found in the files after a's to a (b is emptied): 0, or 1 when b's files
 * describe the objects differently from a's (then probe all files in one sequence, which
 * decides as a single reader would). */
int read_probe_merge(read_probe *a, read_probe *b, h5ark_error *err);

/* Open a file to probe it, read-only: its HDF5 handle and the size the library found (where
 * every dataset must end). -1 with err saying why it could not be opened (not HDF5, not
 * readable, absent, an I/O error). */
int read_probe_open(const char *path, hid_t *file, uint64_t *size, h5ark_error *err);

/* ---- pack's probe of sample files (LBANN, docs/LBANN.md) ---------------------------------
 * One request and one answer a file: the sample groups (the ones named, or every top-level
 * group the file has, by name) and where each field's dataset lies under each of them. The
 * fields are plain numeric datasets (any rank, read as their C-order elements), so nothing
 * of readhdf's families is looked for; the answer is a packed record per sample and field. */
typedef struct {
    uint64_t count;  /* elements */
    uint64_t offset; /* contiguous: where its bytes start; chunked: its chunk table entry */
    h5ark_dtype dtype;
    bool exact;      /* its bytes are dtype's as memory holds them */
    bool contiguous; /* in one piece without filters (contiguous storage, or compact in its
                        object header): pread */
    bool chunked;    /* chunks the probe listed (sample_chunks.h), read without the library */
} sample_field;

typedef struct sample_probe {
    h5u_names groups; /* the samples, as named or listed */
    size_t nfields;
    sample_field *facts; /* [sample * nfields + field], for the samples before `failed` */
    size_t failed;       /* the first sample that failed (groups.n when none did) */
    size_t failed_field; /* and which of its fields; not_found: the field is absent */
    h5ark_error error;
    sample_chunk_table chunks; /* the chunked fields' chunks */
} sample_probe;

/* Probe one file: groups == NULL lists its top-level groups (hard links only, by name);
 * nfields == 0 only names them. -1 with err when the file itself cannot be read; 0
 * otherwise, a sample that fails saying so in out->failed. */
int sample_probe_file(const char *path, const char *const *groups, size_t ngroups,
                      const char *const *fields, size_t nfields, sample_probe *out,
                      h5ark_error *err);
void sample_probe_clear(sample_probe *p);
/* A deep copy of src into *dst; -1 when out of memory (dst then empty). Its size in memory
 * in *bytes when not NULL. */
int sample_probe_copy(sample_probe *dst, const sample_probe *src, size_t *bytes);
/* As MessagePack, between the probe and the daemon (decoding checks every length). */
h5ark_value *sample_probe_encode(const sample_probe *p);
int sample_probe_decode(const h5ark_value *v, size_t nfields, sample_probe *p, h5ark_error *err);

#endif
