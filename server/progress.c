/* The thread's progress sink (see progress.h). */
#include "progress.h"

#include <stddef.h>

static _Thread_local progress_sink *current;

progress_sink *progress_here(void) {
    return current;
}

progress_sink *progress_swap(progress_sink *s) {
    progress_sink *old = current;
    current = s;
    return old;
}
