/* Logging to stderr with a level threshold; thread-safe (one write per line). Each line is
 * "<UTC time> <level> <message>" (docs/OPERATIONS.md). notice is for the daemon's own
 * events (start, stop) and is the default threshold; info adds a line per request. */
#ifndef H5ARK_LOG_H
#define H5ARK_LOG_H

typedef enum { LOG_ERROR, LOG_WARN, LOG_NOTICE, LOG_INFO, LOG_DEBUG } log_level;

extern log_level log_threshold;
extern int log_rank; /* with several ranks, this rank's number, shown on every line; else -1 */
int log_level_from_name(const char *name, log_level *out);
void log_msg(log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...)  log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...)   log_msg(LOG_WARN, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...)   log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...)  log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
