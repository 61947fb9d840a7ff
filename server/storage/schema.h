/* Names and numbers of Arkouda's HDF5 schema (ARKOUDA_FORMAT.md), in one place for the
 * writers and readers of every object type. */
#ifndef H5ARK_SCHEMA_H
#define H5ARK_SCHEMA_H

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

#define CHILD_VALUES          "values"
#define CHILD_SEGMENTS        "segments"
#define LEGACY_METADATA_GROUP "_arkouda_metadata"
#define LEGACY_BOOLEANS       "booleans"

#endif
