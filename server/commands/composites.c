/* Commands that build composite objects from registry objects: segarray dataframe index
 * reshape (being written). */
#include "commands.h"

const command_def composite_commands[] = {
    {0},
};
