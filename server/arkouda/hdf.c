#include "arkouda/commands.h"

const ak_command ak_hdf_commands[] = {
    {0},
};
