/* libFuzzer target: one request through the whole dispatch path — header decoding,
 * argument checks, and the command itself — on a daemon core with 2 locales and a 64 MiB
 * memory cap. Input layout: byte 0 = number of payload frames (mod 4), bytes 1-2 = header
 * length (little-endian), then the header, then the payload split evenly over the frames. */
#include "config.h"
#include "dispatch.h"
#include "locales.h"
#include "registry.h"
#include "storage/storage.h"

#include <hdf5.h>
#include <stdlib.h>
#include <string.h>

config_t config;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    char tmpl[] = "/tmp/h5ark-fuzz-XXXXXX";
    if (!mkdtemp(tmpl)) abort();
    snprintf(config.data_dir, sizeof config.data_dir, "%s", tmpl);
    config.locales = 2;
    config.max_memory = 64u << 20;
    config.max_message = 64u << 20;
    storage_init();
    registry_init(config.max_memory);
    locales_start(config.locales, 0, 1);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 3) return 0;
    int nframes = data[0] % 4;
    size_t hlen = (size_t)data[1] | (size_t)data[2] << 8;
    data += 3, size -= 3;
    if (hlen > size) hlen = size;
    request req = {0};
    req.header = h5ark_value_decode(data, hlen, &req.decode_error);
    h5ark_payload_init(&req.payload);
    size_t rest = size - hlen, each = nframes ? rest / (size_t)nframes : 0;
    const uint8_t *p = data + hlen;
    for (int i = 0; i < nframes; i++) {
        size_t n = i + 1 == nframes ? rest - each * (size_t)(nframes - 1) : each;
        zmq_msg_t msg;
        zmq_msg_init_size(&msg, n);
        memcpy(zmq_msg_data(&msg), p, n);
        p += n;
        h5ark_payload_append(&req.payload, &msg);
        zmq_msg_close(&msg);
    }
    reply r;
    dispatch_handle(&req, &r);
    if (!r.header || r.header_len == 0) abort(); /* every request gets a reply */
    reply_free(&r);
    h5ark_value_destroy(&req.header);
    h5ark_payload_free(&req.payload);
    registry_clear(); /* each input starts from an empty registry */
    return 0;
}
