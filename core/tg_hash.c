/*
 * tg_hash.c -- XXH3 hashing.  xxhash.h is included with XXH_INLINE_ALL so
 * the hash inlines here and no XXH_* symbol leaves the library (a host that
 * links its own xxHash cannot clash with ours).
 */
#include "tg_internal.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

void tg_hash128(const void *data, size_t len, tg_hash128_t *out)
{
    XXH128_hash_t h = XXH3_128bits(data, len);
    out->hi = h.high64;
    out->lo = h.low64;
}

uint64_t tg_hash64(const void *data, size_t len)
{
    return XXH3_64bits(data, len);
}

void tg_hash128_hex(const tg_hash128_t *h, char out[TG_HASH_HEX])
{
    static const char hex[] = "0123456789abcdef";
    for (int i = 0; i < 16; i++) {
        out[i] = hex[(h->hi >> (60 - 4 * i)) & 15];
        out[16 + i] = hex[(h->lo >> (60 - 4 * i)) & 15];
    }
    out[32] = '\0';
}

int tg_hash_value(tg_engine_t *e, const tg_value_t *v, tg_hash128_t *out, tg_error_t *err)
{
    tg_buf_t buf;
    int rc;
    tg_buf_init(&buf, e);
    rc = tg_canon_value(v, &buf, err);
    if (rc == TG_OK)
        tg_hash128(buf.data, buf.len, out);
    tg_buf_free(&buf);
    return rc;
}
