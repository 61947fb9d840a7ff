/* Temporary: replaced by write.c and read.c. */
#include "storage.h"

int storage_write(const storage_item *items, size_t nitems, const char *path, storage_mode mode,
                  storage_file_type file_type, h5ark_value *files, h5ark_value *warnings,
                  h5ark_error *err) {
    (void)items, (void)nitems, (void)path, (void)mode, (void)file_type, (void)files, (void)warnings;
    return h5ark_fail(err, H5ARK_INTERNAL, "tohdf is not implemented yet");
}

int storage_read(char *const *paths, size_t npaths, const char *const *datasets, size_t ndatasets,
                 const storage_read_options *opts, storage_read_item **items, size_t *nitems,
                 h5ark_value *file_errors, h5ark_error *err) {
    (void)paths, (void)npaths, (void)datasets, (void)ndatasets, (void)opts, (void)file_errors;
    *items = NULL;
    *nitems = 0;
    return h5ark_fail(err, H5ARK_INTERNAL, "readhdf is not implemented yet");
}

void storage_read_items_free(storage_read_item *items, size_t nitems) {
    (void)nitems;
    (void)items;
}
