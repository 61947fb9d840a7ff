/* Names and numbers of Arkouda's HDF5 schema (docs/FORMAT.md), in one place for the
 * writers and readers of every object type. */
#ifndef H5ARK_STORAGE_LAYOUT_H
#define H5ARK_STORAGE_LAYOUT_H

/* ObjType attribute values */
enum {
    OBJTYPE_ARRAYVIEW = 0,
    OBJTYPE_PDARRAY = 1,
    OBJTYPE_STRINGS = 2,
    OBJTYPE_SEGARRAY = 3,
    OBJTYPE_CATEGORICAL = 4,
    OBJTYPE_GROUPBY = 5,
    OBJTYPE_DATAFRAME = 6,
    OBJTYPE_DATETIME = 7,
    OBJTYPE_TIMEDELTA = 8,
    OBJTYPE_IPV4 = 9,
    OBJTYPE_BITVECTOR = 10,
    OBJTYPE_SERIES = 11,
    OBJTYPE_INDEX = 12,
    OBJTYPE_MULTIINDEX = 13,
};

/* File_Format root attribute */
enum { FILE_FORMAT_SINGLE = 0, FILE_FORMAT_DISTRIBUTE = 1 };

#define ATTR_FILE_FORMAT     "File_Format"
#define ATTR_OBJTYPE         "ObjType"
#define ATTR_IS_BOOL         "isBool"
#define ATTR_FILE_VERSION    "file_version"
#define ATTR_ARKOUDA_VERSION "arkouda_version"

#define SCHEMA_FILE_VERSION 2.0f
/* What h5ark writes into arkouda_version: Arkouda reads any string there. */
#define SCHEMA_WRITER_VERSION "h5ark " H5ARK_VERSION_STRING

#define ATTR_NUM_KEYS  "NumKeys"
#define ATTR_NUM_COLS  "NumCols"
#define ATTR_NUM_IDX   "NumIdx"
#define ATTR_IS_BIGINT "isBigInt"
#define ATTR_MAX_BITS  "MaxBits"
#define ATTR_NUM_LIMBS "NumLimbs"
#define ATTR_RANK      "Rank"
#define ATTR_SHAPE     "Shape"
/* h5ark's own: the column order of a DataFrame (Arkouda ignores it) */
#define ATTR_COLUMN_ORDER "ColumnOrder"
/* h5ark's own: the names of an Index's levels */
#define ATTR_NAMES "Names"

#define CHILD_CODES          "codes"
#define CHILD_CATEGORIES     "categories"
#define CHILD_NA_CODES       "NA_Codes"
#define CHILD_PERMUTATION    "permutation"
#define CHILD_UNIQUE_KEY_IDX "unique_key_idx"
#define CHILD_INDEX          "Index"
#define PREFIX_KEY           "KEY_"
#define PREFIX_IDX           "IDX_"
#define PREFIX_LIMB          "Limb_"
/* the older client-side layouts: `x_segments`/`x_values`, `x.codes`/`x.categories`/... */
#define LEGACY_NA_CODE "._akNAcode"

#define CHILD_VALUES          "values"
#define CHILD_SEGMENTS        "segments"
#define LEGACY_METADATA_GROUP "_arkouda_metadata"
#define LEGACY_BOOLEANS       "booleans"

#endif
