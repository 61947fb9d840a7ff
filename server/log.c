/* Logging (see log.h). */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

log_level log_threshold = LOG_NOTICE;
int log_rank = -1;

static const char *const names[] = {"error", "warn", "notice", "info", "debug"};

int log_level_from_name(const char *name, log_level *out) {
    for (int i = 0; i <= LOG_DEBUG; i++)
        if (strcmp(name, names[i]) == 0) {
            *out = (log_level)i;
            return 0;
        }
    return -1;
}

void log_msg(log_level level, const char *fmt, ...) {
    if (level > log_threshold) return;
    char line[2048];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    int n = (int)strftime(line, sizeof line, "%Y-%m-%dT%H:%M:%S", &tm);
    n += snprintf(line + n, sizeof line - (size_t)n, ".%03ldZ %-6s ", ts.tv_nsec / 1000000,
                  names[level]);
    if (log_rank >= 0) n += snprintf(line + n, sizeof line - (size_t)n, "rank %d: ", log_rank);
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
    va_end(ap);
    n = m < 0 ? n : (n + m > (int)sizeof line - 2 ? (int)sizeof line - 2 : n + m);
    line[n++] = '\n';
    fwrite(line, 1, (size_t)n, stderr);
}
