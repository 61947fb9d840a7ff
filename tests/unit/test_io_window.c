/* io_window (storage/io.h): small reads served from a window of a file's bytes give what
 * pread gives, larger ones and reads past the end are the caller's, a failed refill is an
 * error, and a window aimed at another file never serves the first one's bytes. */
#include "check.h"
#include "storage/io.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

static int temp_file(const unsigned char *bytes, size_t n) {
    char path[] = "/tmp/h5ark-io-window-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) return -1;
    unlink(path);
    if (io_pwrite_full(fd, bytes, n, 0)) {
        close(fd);
        return -1;
    }
    return fd;
}

int main(void) {
    enum { N = 3 * IO_WINDOW + 1000 };
    static unsigned char a[N], b[N], got[IO_WINDOW_SMALL + 1];
    for (size_t i = 0; i < N; i++) {
        a[i] = (unsigned char)(i * 7 + 3);
        b[i] = (unsigned char)(i * 13 + 1);
    }
    int fa = temp_file(a, N), fb = temp_file(b, N);
    CHECK(fa >= 0 && fb >= 0);
    io_window *w = malloc(sizeof *w);
    io_window_reset(w, fa);
    /* forward, backward within the window, across a refill, the last bytes of the file */
    const uint64_t at[] = {100, 5000, 4096, 0, IO_WINDOW - 10, 2 * IO_WINDOW + 77, N - 16, 1};
    for (size_t k = 0; k < sizeof at / sizeof *at; k++) {
        memset(got, 0, sizeof got);
        CHECKF(io_window_read(w, at[k], got, 16) == 0, "at %llu", (unsigned long long)at[k]);
        CHECKF(memcmp(got, a + at[k], 16) == 0, "at %llu", (unsigned long long)at[k]);
    }
    CHECK(io_window_read(w, 0, got, IO_WINDOW_SMALL) == 0 && memcmp(got, a, IO_WINDOW_SMALL) == 0);
    CHECK(io_window_read(w, 0, got, IO_WINDOW_SMALL + 1) == 1); /* too many: the caller's */
    CHECK(io_window_read(w, N - 8, got, 16) == 1);              /* past the end */
    CHECK(io_window_read(w, N + 4096, got, 16) == 1);
    CHECK(io_window_read(NULL, 0, got, 16) == 1);
    /* aimed at another file: its bytes, not the first one's */
    CHECK(io_window_read(w, 200, got, 16) == 0 && memcmp(got, a + 200, 16) == 0);
    io_window_reset(w, fb);
    CHECK(io_window_read(w, 200, got, 16) == 0 && memcmp(got, b + 200, 16) == 0);
    /* a refill that fails is an error, errno saying why */
    close(fb);
    io_window_reset(w, fb);
    errno = 0;
    CHECK(io_window_read(w, 200, got, 16) == -1 && errno == EBADF);
    io_window_reset(w, -1);
    CHECK(io_window_read(w, 200, got, 16) == 1);
    free(w);
    close(fa);
    return check_exit("test_io_window");
}
