/* h5ark: the command-line tool. Talks to h5arkd through libh5ark and prints what comes back
 * for a person to read: global options, the connection, argument parsing and the list of
 * commands (cli.h names where each lives). */
#include "cli.h"

#include <errno.h>
#include <stdarg.h>

static const char *opt_endpoint;
static const char *opt_token_file;
static const char *opt_server_key_file; /* the daemon's CURVE public key: encrypt */
static double opt_timeout = H5ARK_DEFAULT_TIMEOUT_MS / 1000.0;                 /* < 0: forever */
static double opt_connect_timeout = H5ARK_DEFAULT_CONNECT_TIMEOUT_MS / 1000.0; /* < 0: none */

const char *current_cmd = NULL;

int usage_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("h5ark: usage: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    if (current_cmd)
        fprintf(stderr, "\nRun 'h5ark %s --help' for its options.\n", current_cmd);
    else
        fputs("\nRun 'h5ark --help' for the commands.\n", stderr);
    return EXIT_USAGE;
}

int fail(const h5ark_error *err) {
    fprintf(stderr, "h5ark: %s: %s\n", h5ark_code_name(err->code), err->message);
    return EXIT_FAILURE;
}

/* ---- connection ---------------------------------------------------------------------- */

/* The file's first word, as h5arkd reads it. With comments (token files), lines starting
 * with '#' are skipped first, so the daemon's own token file serves the client too; a key
 * file's Z85 text may itself start with '#'. */
static int read_token(const char *path, bool comments, char **token, h5ark_error *err) {
    FILE *f = fopen(path, "r");
    if (!f)
        return h5ark_fail(err, H5ARK_IO_ERROR, "cannot read token file %s: %s", path,
                          strerror(errno));
    char buf[4096];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    char *s = buf, *e = buf + n;
    for (;;) {
        s += strspn(s, " \t\r\n");
        if (!comments || *s != '#') break;
        s += strcspn(s, "\n");
    }
    char *nl = strpbrk(s, " \t\r\n"); /* the first word: a daemon's token file may add a role */
    if (nl) e = nl;
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    *e = '\0';
    if (!*s) return h5ark_fail(err, H5ARK_UNAUTHORIZED, "token file %s holds no token", path);
    *token = strdup(s);
    memset(buf, 0, sizeof buf);
    return *token ? 0 : h5ark_fail(err, H5ARK_RESOURCE_LIMIT, "out of memory");
}

h5ark_client_t *connect_client(h5ark_error *err) {
    char *token = NULL, *server_key = NULL;
    if (opt_token_file && read_token(opt_token_file, true, &token, err)) return NULL;
    if (opt_server_key_file && read_token(opt_server_key_file, false, &server_key, err)) {
        free(token);
        return NULL;
    }
    h5ark_client_t *c = h5ark_client_new(opt_endpoint, token, err);
    free(token);
    if (c && server_key && h5ark_client_set_curve(c, server_key, err)) h5ark_client_destroy(&c);
    free(server_key);
    if (c) {
        h5ark_client_set_timeout(c, opt_timeout < 0 ? -1 : (int)(opt_timeout * 1000));
        h5ark_client_set_connect_timeout(
            c, opt_connect_timeout < 0 ? -1 : (int)(opt_connect_timeout * 1000));
    }
    return c;
}

/* ---- argument parsing ---------------------------------------------------------------- */

typedef struct {
    const char *name;
    const char *summary;
    const char *usage; /* the full help text after the usage line */
    int (*run)(int argc, char **argv);
} command;

static const command *find_command(const char *name);

static void print_command_help(const command *cmd) {
    printf("usage: h5ark [GLOBAL OPTIONS] %s\n%s", cmd->usage, cmd->summary);
}

int next_opt(int argc, char **argv, const struct option *opts, int *status) {
    int idx = 0;
    int c = getopt_long(argc, argv, ":h", opts, &idx);
    if (c == 'h') {
        print_command_help(find_command(current_cmd));
        *status = 0;
        return -2;
    }
    if (c == '?') {
        if (optopt)
            *status = usage_error("unknown option '-%c' for %s", optopt, current_cmd);
        else
            *status = usage_error("unknown option '%s' for %s", argv[optind - 1], current_cmd);
        return -2;
    }
    if (c == ':') {
        *status = usage_error("option '%s' needs a value", argv[optind - 1]);
        return -2;
    }
    return c;
}

bool parse_uint(const char *s, uint64_t *out) {
    if (!s || !*s || *s == '-' || *s == '+') return false;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*end || errno) return false;
    *out = v;
    return true;
}

int need_uint(const char *opt, const char *s, uint64_t *out) {
    if (!parse_uint(s, out))
        return usage_error("%s takes a whole number of 0 or more, not '%s'", opt, s);
    return 0;
}

int need_number(const char *opt, const char *s, h5ark_number *out) {
    if (!h5ark_number_parse(s, out)) return usage_error("%s takes a number, not '%s'", opt, s);
    return 0;
}

const struct option no_opts[] = {{"help", no_argument, 0, 'h'}, {0}};

int no_positional(int argc, char **argv) {
    int status = -1, c;
    while ((c = next_opt(argc, argv, no_opts, &status)) != -1)
        if (c == -2) return status;
    if (optind < argc)
        return usage_error("%s takes no arguments, got '%s'", current_cmd, argv[optind]);
    return -1;
}

int string_options(int argc, char **argv, const struct option *opts, const char **values) {
    int status = -1, c;
    while ((c = next_opt(argc, argv, opts, &status)) != -1) {
        if (c == -2) return status;
        if (c >= 1000) values[c - 1000] = optarg;
    }
    return -1;
}

/* ---- help and the list of commands --------------------------------------------------- */

static void print_help(void);

static int cmd_help(int argc, char **argv) {
    int status = -1, c;
    while ((c = next_opt(argc, argv, no_opts, &status)) != -1)
        if (c == -2) return status;
    if (argc - optind > 1) return usage_error("help takes at most one COMMAND");
    if (argc - optind == 0) {
        print_help();
        return 0;
    }
    const command *cmd = find_command(argv[optind]);
    if (!cmd) {
        current_cmd = NULL; /* point to the list of commands */
        return usage_error("unknown command '%s'", argv[optind]);
    }
    print_command_help(cmd);
    return 0;
}

static const command commands[] = {
    {"ping", "Check that the daemon answers and print the round-trip time.\n", "ping", cmd_ping},
    {"config", "Print the daemon's configuration.\n", "config", cmd_config},
    {"status",
     "List the requests the daemon is running and how far each has got.\n"
     "For each: the client that sent it (its routing identity, and its address: tcp, ipc),\n"
     "how long it has run, and DONE of TOTAL in bytes, rows or files (- when the request\n"
     "reports no measure).\n",
     "status", cmd_status},
    {"whoami",
     "Print who the token names and what the user holds of each quota.\n"
     "User, role and groups; then for memory, disk, objects and requests in flight what the\n"
     "user has, of what quota (a daemon whose token file names users; without, the user is\n"
     "nil).\n",
     "whoami", cmd_whoami},
    {"reload",
     "Have the daemon read its token file again.\n"
     "With users it takes an admin's token. A bad file is refused with the reason, the\n"
     "tokens in force staying.\n",
     "reload", cmd_reload},
    {"ls",
     "List the groups and datasets of an HDF5 file in the daemon's data directory.\n"
     "An ExeTera field is one entry, of kind field, with its FIELDTYPE, LENGTH and COMPLETED.\n"
     "  --recursive      descend into groups\n",
     "ls FILE [--recursive]", cmd_ls},
    {"info", "Describe the named objects, or all objects when no NAME is given.\n",
     "info [NAME...]", cmd_info},
    {"share",
     "Let users, g:GROUPs or * read the caller's objects, as OWNER/NAME.\n"
     "For a daemon whose token file names users. Prints each NAME and whom it is shared\n"
     "with.\n"
     "  --with S         a user, g:GROUP or * (repeat for several)\n",
     "share NAME... --with S [--with S...]", cmd_share},
    {"unshare", "Take back what share gave. Prints each NAME and whom it is still shared with.\n",
     "unshare NAME... --with S [--with S...]", cmd_unshare},
    {"getacl",
     "Print the ACL that governs a folder (or a file's folder) of the data directory.\n"
     "For a daemon whose token file names users; needs readACL. First the folder whose\n"
     ".h5ark-acl it is (or the defaults), then one line per subject (a user, g:GROUP or\n"
     "default) with the permissions it grants.\n",
     "getacl PATH", cmd_getacl},
    {"setacl",
     "Replace a folder's ACL, atomically, and print it as written.\n"
     "Needs updateACL. A permission left out of an entry is not granted.\n"
     "  --acl JSON       the entries, e.g. '[{\"subject\": \"g:physics\", \"read\": true}]'\n",
     "setacl PATH --acl JSON", cmd_setacl},
    {"create",
     "Create a pdarray NAME in the daemon.\n"
     "  --dtype T        int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64\n"
     "                   bool (default float64)\n"
     "  --size N         number of elements (not needed for --fill arange)\n"
     "  --fill KIND      empty zeros ones full arange linspace uniform randint (default zeros)\n"
     "  --value V        the value of --fill full\n"
     "  --start, --stop  the range of arange (stop excluded) and linspace (stop included)\n"
     "  --step S         the step of arange (default 1)\n"
     "  --low, --high    the range of uniform and randint (high excluded)\n"
     "  --seed N         the random seed of uniform and randint\n",
     "create NAME [--dtype T] --size N [--fill KIND] [--value V] [--start A] [--stop B]\n"
     "       [--step S] [--low L] [--high H] [--seed N]",
     cmd_create},
    {"save",
     "Write objects to HDF5 in the daemon's data directory (Arkouda's layout).\n"
     "  --path P         file name (relative to the data directory)\n"
     "  --dataset D      dataset name for each NAME, in order (default: the object names)\n"
     "  --mode M         truncate (default: new files), append (add datasets to the files)\n"
     "                   or update (replace datasets the files hold)\n"
     "  --file-type F    distribute (default: one file per locale, P_LOCALE0000...) or single\n"
     "  --compression C  none (default: contiguous datasets) or gzip (chunked, shuffled)\n"
     "  --level N        gzip level, 1 to 9 (default 4)\n",
     "save NAME... --path P [--dataset D]... [--mode truncate|append|update]\n"
     "       [--file-type distribute|single] [--compression none|gzip [--level N]]",
     cmd_save},
    {"writepart",
     "Append object NAME's rows to a field of an ExeTera dataframe.\n"
     "The file, dataframe and field are made when missing; the field is left not completed.\n"
     "Prints the field's rows.\n"
     "  --path P         the file (relative to the data directory)\n"
     "  --field DF/F     the dataframe group and the field\n"
     "  --fieldtype T    for a new field (default: the object's own)\n",
     "writepart NAME --path P --field DF/F [--fieldtype T]", cmd_writepart},
    {"complete",
     "Mark a field of an ExeTera dataframe completed; prints its rows.\n"
     "  --path P         the file (relative to the data directory)\n"
     "  --field DF/F     the dataframe group and the field\n",
     "complete --path P --field DF/F", cmd_complete},
    {"load",
     "Read objects from HDF5 files and print the objects created.\n"
     "PATHs are file names or glob patterns relative to the data directory.\n"
     "  --dataset D      read only this dataset; repeat for more (default: all)\n"
     "  --start ROW      first row of the files' concatenation to read (default 0)\n"
     "  --stop ROW       end of the rows, excluded (default: the last row)\n",
     "load PATH... [--dataset D]... [--start ROW] [--stop ROW]", cmd_load},
    {"pack",
     "LBANN sample packing: arrays of the samples of HDF5 files or of a sample list.\n"
     "Applies LBANN's data and experiment schemas (YAML files of this machine) to the samples\n"
     "of HDF5 files (each top-level group a sample) or of an LBANN sample list, and prints the\n"
     "arrays made and where each field lies in them.\n"
     "  --data-schema FILE        the data schema (required)\n"
     "  --experiment-schema FILE  the experiment schema (default: every field)\n"
     "  --sample-list LIST        the samples of this list (relative to the data directory)\n"
     "  --name PREFIX             a prefix for the arrays' names\n",
     "pack --data-schema FILE [--experiment-schema FILE] (PATH... | --sample-list LIST) "
     "[--name PREFIX]",
     cmd_pack},
    {"get",
     "Print the elements of a pdarray or strings object, one per line; strings are quoted.\n"
     "  --start I        first element (default 0)\n"
     "  --stop J         end of the range, excluded (default: the end)\n"
     "  --max N          print at most N elements (default 100; 0 for all)\n",
     "get NAME [--start I] [--stop J] [--max N]", cmd_get},
    {"delete", "Delete objects from the daemon (all or none).\n", "delete NAME...", cmd_delete},
    {"unpack",
     "Take the composite NAME apart: each array and Strings in it as an object of its own.\n"
     "Each is shared, not copied, and printed as COMPONENT NAME; NAME is then deleted.\n"
     "  --keep           keep NAME too\n",
     "unpack NAME [--keep]", cmd_unpack},
    {"checkpoint",
     "Write every object as a checkpoint and print its id, objects, bytes and seconds.\n"
     "Without --path it is a new one in the daemon's --checkpoint-dir.\n"
     "  --path P         the folder P/N of the data directory instead\n"
     "  --name N         the checkpoint's folder in P (default: a new id)\n"
     "  --mode M         error (default: refuse an existing one) or overwrite\n",
     "checkpoint [--path P [--name N] [--mode error|overwrite]]", cmd_checkpoint},
    {"load-checkpoint",
     "Publish the objects of the checkpoint folder P/N, over objects of the same names.\n"
     "P is a folder of the data directory.\n",
     "load-checkpoint --path P --name N", cmd_load_checkpoint},
    {"shutdown", "Ask the daemon to finish in-flight requests and exit.\n", "shutdown",
     cmd_shutdown},
    {"help", "Print the commands, or a command's options.\n", "help [COMMAND]", cmd_help},
};

static const command *find_command(const char *name) {
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
        if (name && strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

static void print_help(void) {
    printf("usage: h5ark [--endpoint URL] [--token-file FILE] [--server-key FILE]\n"
           "             [--timeout SECONDS] [--connect-timeout SECONDS] COMMAND ...\n"
           "\n"
           "Talk to an h5arkd daemon.\n"
           "\n"
           "Global options:\n"
           "  --endpoint URL       the daemon's ZeroMQ endpoint (default $H5ARK_ENDPOINT or %s)\n"
           "  --token-file FILE    file holding the access token (default $H5ARK_TOKEN_FILE)\n"
           "  --server-key FILE    the daemon's CURVE public key (its .pub file): encrypt\n"
           "                       (default $H5ARK_SERVER_KEY)\n"
           "  --timeout SECONDS    how long to wait for a reply (default %g; 0 forever)\n"
           "  --connect-timeout SECONDS\n"
           "                       how long to wait for the daemon to answer at all, asked\n"
           "                       with a ping before the command (default\n"
           "                       $H5ARK_CONNECT_TIMEOUT or %g; 0: as long as --timeout)\n"
           "  --version            print the version\n"
           "  --help               this text\n"
           "\n"
           "Commands:\n",
           H5ARK_DEFAULT_ENDPOINT, H5ARK_DEFAULT_TIMEOUT_MS / 1000.0,
           H5ARK_DEFAULT_CONNECT_TIMEOUT_MS / 1000.0);
    for (size_t i = 0; i < sizeof commands / sizeof *commands; i++) {
        const char *nl = strchr(commands[i].summary, '\n');
        printf("  %-10s %.*s\n", commands[i].name, (int)(nl - commands[i].summary),
               commands[i].summary);
    }
    printf("\nRun 'h5ark help COMMAND' (or 'h5ark COMMAND --help') for a command's options.\n"
           "When stderr is a terminal, a create, save, load, writepart or complete still\n"
           "running after a second shows how far it is on one line there, until it ends.\n");
}

/* The SECONDS of --timeout and --connect-timeout: 0 means no bound (-1). */
static bool parse_seconds(const char *s, double *out) {
    char *end;
    double t = strtod(s, &end);
    if (*end || end == s || !(t >= 0) || t > 2e6) return false;
    *out = t == 0 ? -1 : t;
    return true;
}

int main(int argc, char **argv) {
    enum { O_ENDPOINT = 1000, O_TOKEN_FILE, O_TIMEOUT, O_CONNECT_TIMEOUT, O_VERSION, O_SERVER_KEY };
    static const struct option opts[] = {
        {"endpoint", required_argument, 0, O_ENDPOINT},
        {"token-file", required_argument, 0, O_TOKEN_FILE},
        {"server-key", required_argument, 0, O_SERVER_KEY},
        {"timeout", required_argument, 0, O_TIMEOUT},
        {"connect-timeout", required_argument, 0, O_CONNECT_TIMEOUT},
        {"version", no_argument, 0, O_VERSION},
        {"help", no_argument, 0, 'h'},
        {0}};
    opt_endpoint = getenv("H5ARK_ENDPOINT");
    if (opt_endpoint && !*opt_endpoint) opt_endpoint = NULL;
    opt_token_file = getenv("H5ARK_TOKEN_FILE");
    if (opt_token_file && !*opt_token_file) opt_token_file = NULL;
    opt_server_key_file = getenv("H5ARK_SERVER_KEY");
    if (opt_server_key_file && !*opt_server_key_file) opt_server_key_file = NULL;
    const char *connect_timeout = getenv("H5ARK_CONNECT_TIMEOUT"), *connect_timeout_from = NULL;
    if (connect_timeout && *connect_timeout) connect_timeout_from = "$H5ARK_CONNECT_TIMEOUT";
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "+:h", opts, NULL)) != -1) {
        switch (c) {
        case O_ENDPOINT: opt_endpoint = optarg; break;
        case O_TOKEN_FILE: opt_token_file = optarg; break;
        case O_SERVER_KEY: opt_server_key_file = optarg; break;
        case O_TIMEOUT:
            if (!parse_seconds(optarg, &opt_timeout))
                return usage_error("--timeout takes seconds (0 waits forever), not '%s'", optarg);
            break;
        case O_CONNECT_TIMEOUT:
            connect_timeout = optarg;
            connect_timeout_from = "--connect-timeout";
            break;
        case O_VERSION: printf("h5ark %s\n", H5ARK_VERSION_STRING); return 0;
        case 'h': print_help(); return 0;
        case ':': return usage_error("option '%s' needs a value", argv[optind - 1]);
        default: return usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (connect_timeout_from && !parse_seconds(connect_timeout, &opt_connect_timeout))
        return usage_error("%s takes seconds (0: as long as --timeout), not '%s'",
                           connect_timeout_from, connect_timeout);
    if (optind >= argc) return usage_error("no COMMAND given");
    const command *cmd = find_command(argv[optind]);
    if (!cmd) return usage_error("unknown command '%s'", argv[optind]);
    current_cmd = cmd->name;
    int sub_argc = argc - optind;
    char **sub_argv = argv + optind;
    optind = 0; /* glibc: start a fresh scan over the command's arguments */
    return cmd->run(sub_argc, sub_argv);
}
