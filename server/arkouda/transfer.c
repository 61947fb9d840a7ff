#include "arkouda/commands.h"

const ak_command ak_transfer_commands[] = {
    {0},
};
