/* Grouping commands: groupby aggregate categorical (being written). */
#include "commands.h"

const command_def groupby_commands[] = {
    {0},
};
