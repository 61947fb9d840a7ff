/* Isolation of the HDF5 library from untrusted files. HDF5 1.10.8 can crash (SIGSEGV, heap
 * overflows) decoding damaged metadata, so the metadata of existing files is decoded in
 * probe processes running this same program (one per locale, at most 8): lshdf and
 * readhdf's probing run there entirely, and the daemon only moves data at the places the
 * probes found. Before append, update and repack open a file, a probe walks its whole tree
 * and every attribute (verdicts cached by device, inode, size and mtime). If a probe dies,
 * the file is refused with schema_error and a new probe is started. */
#ifndef H5ARK_SANDBOX_H
#define H5ARK_SANDBOX_H

#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <stdbool.h>
#include <stdint.h>

/* The argument that makes h5arkd a probe (main.c checks it before anything else). */
#define SANDBOX_PROBE_ARG "--file-probe"
/* What a probe's work may take (its registry's limit): it holds no objects, but lshdf of an
 * awkward0 group decompresses blobs, which a hostile file can make huge. */
#define SANDBOX_PROBE_MEMORY (UINT64_C(1) << 30)

/* Start the probe process; without it (or with H5ARK_NO_SANDBOX set) checks pass. */
int sandbox_start(void);
void sandbox_stop(void);
/* 0 when the probe walked the file without dying (whatever it found: the caller's own
 * error handling reports ordinary errors); -1 with schema_error when it crashed. */
int sandbox_check_file(const char *abs_path, h5ark_error *err);
/* What a listing holds: lshdf's top level or whole tree, or the whole tree as the HTTP
 * gateway shows it, which adds the root group (an entry of path "/", kind group, with its
 * attributes) and the value of each scalar dataset (storage_list). */
typedef enum { LIST_TOP, LIST_TREE, LIST_VIEW } list_mode;

/* lshdf, run in the probe: the daemon itself never walks an untrusted file's attributes
 * (the part of the library that crashes). schema_error when the probe died on the file. */
int sandbox_list(const char *abs_path, list_mode mode, h5ark_value *entries, h5ark_error *err);
struct read_probe_request;
struct read_probe;
struct sample_probe;

/* What the probes run (in the probe processes, and in process when there are none), set at
 * start by the storage layer above: the sandbox only carries requests and answers. */
typedef struct {
    int (*list)(const char *abs_path, list_mode mode, h5ark_value *entries, h5ark_error *err);
    int (*probe_files)(const struct read_probe_request *rq, struct read_probe *out,
                       h5ark_error *err);
    int (*probe_samples)(const char *abs_path, const char *const *groups, size_t ngroups,
                         const char *const *fields, size_t nfields, struct sample_probe *out,
                         h5ark_error *err);
} sandbox_work;
void sandbox_set_work(const sandbox_work *work);

/* readhdf's probing of its files (probe.h), run in the probes: slices of a long
 * file list on several at once. A file that crashes a probe is a failed file (schema_error);
 * the rest are probed again without it when errors are allowed. In process without probes. */
int sandbox_probe_read(const struct read_probe_request *rq, struct read_probe *out,
                       h5ark_error *err);
/* pack's probe of one sample file (probe.h, sample_probe_file), in a probe: the daemon
 * never opens a sample file's metadata itself. A file that crashes the probe is
 * schema_error. In process without probes. */
int sandbox_probe_samples(const char *abs_path, const char *const *groups, size_t ngroups,
                          const char *const *fields, size_t nfields, struct sample_probe *out,
                          h5ark_error *err);
/* Tests set this to a string: probes then die (SIGSEGV) on every file whose path holds it,
 * as they would on a file that crashes the library. */
#define SANDBOX_FAULT_ENV "H5ARK_TEST_PROBE_CRASH"
/* The probe's main loop (h5arkd --file-probe DATA_DIR): requests on stdin, answers on stdout.
 * The storage layer is set up (storage_init) before. */
int sandbox_probe_main(const char *data_dir);

#endif
