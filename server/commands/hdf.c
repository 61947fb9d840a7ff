/* HDF5 commands: tohdf readhdf lshdf (being written). */
#include "commands.h"

const command_def hdf_commands[] = {
    {0},
};
