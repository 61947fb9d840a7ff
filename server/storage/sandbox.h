/* Isolation of the HDF5 library from untrusted files. HDF5 1.10.8 can crash (SIGSEGV, heap
 * overflows) decoding damaged metadata, so before the daemon opens an existing file it
 * asks a separate probe process, running this same program, to walk the file's whole
 * tree and every attribute the way lshdf does. If the probe dies, the file is refused
 * with schema_error and a new probe is started; the daemon never touches that file.
 * Verdicts are cached by (device, inode, size, mtime), so a file is probed once per
 * version. */
#ifndef H5ARK_SANDBOX_H
#define H5ARK_SANDBOX_H

#include "h5ark_value.h"
#include "h5ark_wire.h"

#include <stdbool.h>

/* The argument that makes h5arkd a probe (main.c checks it before anything else). */
#define SANDBOX_PROBE_ARG "--file-probe"

/* Start the probe process; without it (or with H5ARK_NO_SANDBOX set) checks pass. */
int sandbox_start(void);
void sandbox_stop(void);
/* 0 when the probe walked the file without dying (whatever it found: the caller's own
 * error handling reports ordinary errors); -1 with schema_error when it crashed. */
int sandbox_check_file(const char *abs_path, h5ark_error *err);
/* lshdf, run in the probe: the daemon itself never walks an untrusted file's attributes
 * (the part of the library that crashes). schema_error when the probe died on the file. */
int sandbox_list(const char *abs_path, bool recursive, h5ark_value *entries, h5ark_error *err);
/* The probe's main loop (h5arkd --file-probe DATA_DIR): requests on stdin, answers on stdout. */
int sandbox_probe_main(const char *data_dir);

#endif
