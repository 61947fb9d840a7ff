/* The storage layer's start: HDF5 set up for this process, the schema table filled (the
 * one list of every on-disk family, in the order that breaks ties between their claims),
 * and the sandbox told what its probes run. */
#include "storage.h"

#include "families.h"
#include "probe.h"
#include "sandbox.h"

/* Order matters only where two families claim an object equally: a SegArray's unmarked
 * group (`segments` beside non-byte `values`) before Strings' (`values`); an ExeTera
 * dataframe (every child a field group) before any family that goes by a child's name. */
static const schema_family *const table[] = {
    &schema_pdarray,     &schema_bigint,        &schema_arrayview, &schema_h5strings,
    &schema_exetera_df,  &schema_exetera_field, &schema_segarray,  &schema_strings,
    &schema_categorical, &schema_groupby,       &schema_dataframe, &schema_index,
    &schema_multiindex,  &schema_awkward,       &schema_awkward0,
};

int storage_init(void) {
    if (h5u_init() < 0) return -1;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        schema_register(table[i]);
    sandbox_set_work(&(sandbox_work){
        .list = storage_list, .probe_files = read_probe_files, .probe_samples = sample_probe_file});
    return 0;
}
