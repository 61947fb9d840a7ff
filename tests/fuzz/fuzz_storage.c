/* libFuzzer target: the storage reader on an untrusted file — lshdf of the whole tree,
 * then readhdf of every top-level object — as the daemon would run them. */
#include "config.h"
#include "locales.h"
#include "registry.h"
#include "storage/storage.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

config_t config;
static char path[4200];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    char tmpl[] = "/tmp/h5ark-fuzz-XXXXXX";
    if (!mkdtemp(tmpl)) abort();
    snprintf(config.data_dir, sizeof config.data_dir, "%s", tmpl);
    snprintf(path, sizeof path, "%s/input.h5", tmpl);
    config.locales = 2;
    config.max_memory = 64u << 20;
    storage_init();
    registry_init(config.max_memory);
    locales_start(config.locales, 0, 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    FILE *f = fopen(path, "wb");
    if (!f) abort();
    fwrite(data, 1, size, f);
    fclose(f);
    h5ark_error err = {0};
    h5ark_value *entries = h5ark_value_array();
    storage_list(path, true, entries, &err);
    h5ark_value_destroy(&entries);

    char *paths[] = {path};
    storage_read_options opts = {.strict_types = true};
    storage_read_item *items = NULL;
    size_t nitems = 0;
    h5ark_value *file_errors = h5ark_value_array(), *warnings = h5ark_value_array();
    if (storage_read(paths, 1, NULL, 0, &opts, &items, &nitems, file_errors, warnings, &err) == 0)
        storage_read_items_free(items, nitems);
    h5ark_value_destroy(&file_errors);
    h5ark_value_destroy(&warnings);
    return 0;
}
