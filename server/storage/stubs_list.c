/* Temporary: replaced by list.c. */
#include "storage.h"

int storage_list(const char *abs_path, bool recursive, h5ark_value *entries, h5ark_error *err) {
    (void)abs_path, (void)recursive, (void)entries;
    return h5ark_fail(err, H5ARK_INTERNAL, "lshdf is not implemented yet");
}
