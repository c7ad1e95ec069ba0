/*
 * tg_image.c -- compiled registry images: one read-only file that holds a
 * registry's sources, checked whole before anything in it is used.
 *
 * Design (format version 1).  An image is the registry as it was compiled:
 * each source's bytes (the registry file exactly as read), its server, how
 * messages name it (label), its absolute path at compile time, its format
 * and whether it is trusted, with the XXH3-128 of its bytes.  An engine
 * opens it instead of the files: tg_image_map maps the file read-only
 * (MAP_PRIVATE, PROT_READ), so every process that maps one image shares
 * its pages, and the texts are parsed straight out of the mapping.  The
 * registry is then built from those texts by the same code that builds it
 * from files, so decisions, `registry lint` findings, pins and
 * registry_hash are those of the sources by construction, under whatever
 * registry settings the policy gives.
 *
 * Why this and not compiled schemas with offsets in the file (yet): a
 * compiled schema holds PCRE2 code and tg_value_t trees built for one
 * address space; laying them out in an arena with offsets is the next
 * format version (the `abi` field is there for it: an image whose layout
 * this library does not read is refused, never guessed at).  Version 1
 * fixes the file, its checks and every place that takes one, so the
 * gateway's master can map it before fork and reloads can swap images.
 *
 * Layout, all integers little-endian:
 *   header, 64 bytes:
 *     0  magic "\x89TGIMG\r\n" (not JSON: 0x89 starts no JSON text)
 *     8  u32 format version (TG_IMAGE_VERSION)
 *    12  u32 abi (TG_IMAGE_ABI: the layout of what the sections hold)
 *    16  u64 total length of the image in bytes
 *    24  u32 number of sources
 *    28  u32 flags, 0
 *    32  u64 offset of the source directory
 *    40  u64 0
 *    48  16 bytes: XXH3-128 of the whole image with these 16 bytes zero
 *   source directory: one 96-byte entry per source
 *     0  u64 offset, u64 length of the text
 *    16  u64 offset, u64 length of the server (flag 2 says one was given)
 *    32  u64 offset, u64 length of the label
 *    48  u64 offset, u64 length of the absolute path ("" for a text)
 *    64  16 bytes: XXH3-128 of the text
 *    80  u32 format (0 auto, 1 native, 2 openai, 3 anthropic, 4 mcp)
 *    84  u32 flags: 1 trusted, 2 a server was given; no other bit
 *    88  u64 0
 *   then the bytes the entries point to.
 *
 * Hostile input: tg_image_open checks the length, magic, version, abi,
 * flags and checksum before it reads anything else, then every entry's
 * offsets and lengths against the image's length (with overflow checks)
 * and its format and flags; any failure is TG_E_IMAGE naming what is wrong,
 * and nothing of the image is used.  A stale image (a source file that
 * still exists at its recorded path and no longer hashes to what the image
 * holds) is TG_E_IMAGE_STALE from tg_image_check_sources.
 */
#include "tg_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define HEADER_BYTES 64
#define ENTRY_BYTES 96
#define CHECKSUM_AT 48
#define FLAG_TRUSTED 1u
#define FLAG_SERVER 2u
#define FORMAT_MAX 4

static const char MAGIC[8] = {'\x89', 'T', 'G', 'I', 'M', 'G', '\r', '\n'};

struct tg_image_t {
    tg_engine_t *e;
    const unsigned char *data;
    size_t len;
    void *map; /* our mapping of len bytes (data), or NULL: the caller's bytes */
    size_t n;
};

/* ---- little-endian fields ------------------------------------------------ */

static uint32_t get32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const unsigned char *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static void put_hash(unsigned char *p, const tg_hash128_t *h)
{
    put64(p, h->hi);
    put64(p + 8, h->lo);
}

static tg_hash128_t get_hash(const unsigned char *p)
{
    tg_hash128_t h;
    h.hi = get64(p);
    h.lo = get64(p + 8);
    return h;
}

/* XXH3-128 of the image with its checksum field read as zeros. */
static tg_hash128_t checksum(const unsigned char *data, size_t len)
{
    static const unsigned char zeros[16] = {0};
    XXH3_state_t st;
    XXH128_hash_t h;
    tg_hash128_t out;
    XXH3_INITSTATE(&st);
    XXH3_128bits_reset(&st);
    XXH3_128bits_update(&st, data, CHECKSUM_AT);
    XXH3_128bits_update(&st, zeros, sizeof zeros);
    XXH3_128bits_update(&st, data + CHECKSUM_AT + 16, len - CHECKSUM_AT - 16);
    h = XXH3_128bits_digest(&st);
    out.hi = h.high64;
    out.lo = h.low64;
    return out;
}

void tg_image_seal(unsigned char *data, size_t len)
{
    tg_hash128_t sum;
    if (len < HEADER_BYTES)
        return;
    put64(data + 16, len);
    sum = checksum(data, len);
    put_hash(data + CHECKSUM_AT, &sum);
}

int tg_image_is(const void *data, size_t len)
{
    return len >= sizeof MAGIC && memcmp(data, MAGIC, sizeof MAGIC) == 0;
}

/* ---- writing ------------------------------------------------------------- */

int tg_image_write(tg_engine_t *e, const tg_image_source_t *src, size_t n, tg_buf_t *out,
                   tg_error_t *err)
{
    size_t start = out->len, at, total;
    unsigned char head[HEADER_BYTES];

    tg_error_clear(err);
    (void)e;
    if (n > UINT32_MAX)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "too many sources for one image");
    for (size_t i = 0; i < n; i++)
        if ((!src[i].text && src[i].text_len) || src[i].format < 0 || src[i].format > FORMAT_MAX)
            return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "source %zu: no text or an unknown format",
                           i);

    /* header and directory first, filled in once the offsets are known */
    memset(head, 0, sizeof head);
    if (tg_buf_append(out, head, sizeof head, err) != TG_OK)
        return err->code;
    for (size_t i = 0; i < n; i++) {
        unsigned char entry[ENTRY_BYTES];
        memset(entry, 0, sizeof entry);
        if (tg_buf_append(out, entry, sizeof entry, err) != TG_OK)
            return err->code;
    }
    at = start + HEADER_BYTES;
    for (size_t i = 0; i < n; i++, at += ENTRY_BYTES) {
        const tg_image_source_t *s = &src[i];
        struct {
            const char *p;
            size_t len;
        } parts[4] = {{s->text, s->text_len},
                      {s->server, s->server ? s->server_len : 0},
                      {s->label, s->label ? s->label_len : 0},
                      {s->path, s->path ? s->path_len : 0}};
        tg_hash128_t h;
        for (int k = 0; k < 4; k++) {
            size_t off = out->len - start;
            if (parts[k].len && tg_buf_append(out, parts[k].p, parts[k].len, err) != TG_OK)
                return err->code;
            put64((unsigned char *)out->data + at + 16 * k, off);
            put64((unsigned char *)out->data + at + 16 * k + 8, parts[k].len);
        }
        tg_hash128(s->text, s->text_len, &h);
        put_hash((unsigned char *)out->data + at + 64, &h);
        put32((unsigned char *)out->data + at + 80, (uint32_t)s->format);
        put32((unsigned char *)out->data + at + 84,
              (s->trusted ? FLAG_TRUSTED : 0) | (s->server ? FLAG_SERVER : 0));
    }
    total = out->len - start;
    {
        unsigned char *h = (unsigned char *)out->data + start;
        memcpy(h, MAGIC, sizeof MAGIC);
        put32(h + 8, TG_IMAGE_VERSION);
        put32(h + 12, TG_IMAGE_ABI);
        put64(h + 16, total);
        put32(h + 24, (uint32_t)n);
        put64(h + 32, HEADER_BYTES);
        tg_image_seal(h, total);
    }
    return TG_OK;
}

/* ---- reading ------------------------------------------------------------- */

/* Whether [off, off + len) lies inside an image of total bytes. */
static int inside(uint64_t off, uint64_t len, size_t total)
{
    return off <= total && len <= total - off;
}

static int check(const tg_image_t *img, tg_error_t *err)
{
    const unsigned char *d = img->data;
    size_t len = img->len;
    uint64_t n, dir;
    tg_hash128_t want, got;

    if (len < HEADER_BYTES || !tg_image_is(d, len))
        return tg_fail(err, TG_E_IMAGE, 0, "not a toolgate registry image (no magic)");
    if (get32(d + 8) != TG_IMAGE_VERSION)
        return tg_fail(err, TG_E_IMAGE, 8,
                       "registry image of format version %u; this toolgate reads %u",
                       (unsigned)get32(d + 8), (unsigned)TG_IMAGE_VERSION);
    if (get32(d + 12) != TG_IMAGE_ABI)
        return tg_fail(err, TG_E_IMAGE, 12, "registry image of ABI %u; this toolgate reads %u",
                       (unsigned)get32(d + 12), (unsigned)TG_IMAGE_ABI);
    if (get64(d + 16) != len)
        return tg_fail(err, TG_E_IMAGE, 16,
                       "registry image says it is %llu bytes long but is %zu (truncated?)",
                       (unsigned long long)get64(d + 16), len);
    if (get32(d + 28) != 0 || get64(d + 40) != 0)
        return tg_fail(err, TG_E_IMAGE, 28, "registry image with unknown flags");
    want = get_hash(d + CHECKSUM_AT);
    got = checksum(d, len);
    if (want.hi != got.hi || want.lo != got.lo)
        return tg_fail(err, TG_E_IMAGE, CHECKSUM_AT, "registry image checksum mismatch (corrupt)");

    n = get32(d + 24);
    dir = get64(d + 32);
    if (dir < HEADER_BYTES || n > (len - HEADER_BYTES) / ENTRY_BYTES ||
        !inside(dir, n * ENTRY_BYTES, len))
        return tg_fail(err, TG_E_IMAGE, 32, "registry image source directory out of bounds");
    for (uint64_t i = 0; i < n; i++) {
        const unsigned char *en = d + dir + i * ENTRY_BYTES;
        size_t at = (size_t)(dir + i * ENTRY_BYTES);
        for (int k = 0; k < 4; k++)
            if (!inside(get64(en + 16 * k), get64(en + 16 * k + 8), len))
                return tg_fail(err, TG_E_IMAGE, at + 16 * (size_t)k,
                               "registry image source %llu: a field out of bounds",
                               (unsigned long long)i);
        if (get32(en + 80) > FORMAT_MAX || (get32(en + 84) & ~(FLAG_TRUSTED | FLAG_SERVER)) ||
            get64(en + 88) != 0)
            return tg_fail(err, TG_E_IMAGE, at + 80,
                           "registry image source %llu: unknown format or flags",
                           (unsigned long long)i);
    }
    return TG_OK;
}

static int open_image(tg_engine_t *e, const void *data, size_t len, void *map, tg_image_t **out,
                      tg_error_t *err)
{
    tg_image_t *img;
    int rc;

    *out = NULL;
    if (len > e->limits.max_registry_bytes)
        return tg_fail(err, TG_E_REGISTRY_TOO_LARGE, 0,
                       "registry image of %zu bytes is larger than max_registry_bytes (%zu)", len,
                       e->limits.max_registry_bytes);
    img = tg_mem_realloc(e, NULL, 0, sizeof *img);
    if (!img)
        return tg_fail(err, TG_E_NOMEM, TG_NO_OFFSET, "out of memory");
    img->e = e;
    img->data = data;
    img->len = len;
    img->map = NULL;
    img->n = 0;
    rc = check(img, err);
    if (rc != TG_OK) {
        tg_mem_free(e, img, sizeof *img);
        return rc;
    }
    img->n = get32(img->data + 24);
    img->map = map;
    tg_engine_retain(e);
    *out = img;
    return TG_OK;
}

int tg_image_open(tg_engine_t *e, const void *data, size_t len, tg_image_t **out, tg_error_t *err)
{
    tg_error_clear(err);
    if (!out || (!data && len))
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "image_open: no data or no out");
    return open_image(e, data, len, NULL, out, err);
}

int tg_image_map(tg_engine_t *e, const char *path, tg_image_t **out, tg_error_t *err)
{
    struct stat st;
    void *map;
    int fd, rc;

    tg_error_clear(err);
    if (!out || !path)
        return tg_fail(err, TG_E_ARG, TG_NO_OFFSET, "image_map: no path or no out");
    *out = NULL;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO must not block the open */
    if (fd < 0)
        return tg_fail(err, TG_E_IO, TG_NO_OFFSET, "cannot open registry image: %s",
                       strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return tg_fail(err, TG_E_IO, TG_NO_OFFSET, "registry image is not a regular file");
    }
    if ((uint64_t)st.st_size > e->limits.max_registry_bytes) {
        close(fd);
        return tg_fail(err, TG_E_REGISTRY_TOO_LARGE, 0,
                       "registry image of %llu bytes is larger than max_registry_bytes (%zu)",
                       (unsigned long long)st.st_size, e->limits.max_registry_bytes);
    }
    if (st.st_size == 0) {
        close(fd);
        return tg_fail(err, TG_E_IMAGE, 0, "not a toolgate registry image (empty)");
    }
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return tg_fail(err, TG_E_IO, TG_NO_OFFSET, "cannot map registry image: %s",
                       strerror(errno));
    rc = open_image(e, map, (size_t)st.st_size, map, out, err);
    if (rc != TG_OK)
        munmap(map, (size_t)st.st_size);
    return rc;
}

void tg_image_free(tg_image_t *img)
{
    tg_engine_t *e;
    if (!img)
        return;
    e = img->e;
    if (img->map)
        munmap(img->map, img->len);
    tg_mem_free(e, img, sizeof *img);
    tg_engine_release(e);
}

size_t tg_image_count(const tg_image_t *img)
{
    return img->n;
}

int tg_image_source(const tg_image_t *img, size_t i, tg_image_source_t *out)
{
    const unsigned char *en;
    uint32_t flags;
    if (i >= img->n)
        return TG_E_ARG;
    en = img->data + get64(img->data + 32) + i * ENTRY_BYTES;
    out->text = (const char *)img->data + get64(en);
    out->text_len = (size_t)get64(en + 8);
    flags = get32(en + 84);
    out->server = flags & FLAG_SERVER ? (const char *)img->data + get64(en + 16) : NULL;
    out->server_len = flags & FLAG_SERVER ? (size_t)get64(en + 24) : 0;
    out->label = (const char *)img->data + get64(en + 32);
    out->label_len = (size_t)get64(en + 40);
    out->path = (const char *)img->data + get64(en + 48);
    out->path_len = (size_t)get64(en + 56);
    out->hash = get_hash(en + 64);
    out->format = (int)get32(en + 80);
    out->trusted = (flags & FLAG_TRUSTED) != 0;
    return TG_OK;
}

/* The hash of the file at path into *h: 1, or 0 when there is no file
 * there (the image stands alone), -1 when it cannot be read. */
static int hash_file(tg_engine_t *e, const char *path, tg_hash128_t *h)
{
    struct stat st;
    void *map;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    (void)e;
    if (st.st_size == 0) {
        close(fd);
        tg_hash128("", 0, h);
        return 1;
    }
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return -1;
    tg_hash128(map, (size_t)st.st_size, h);
    munmap(map, (size_t)st.st_size);
    return 1;
}

int tg_image_check_sources(const tg_image_t *img, tg_error_t *err)
{
    char path[4096];
    tg_error_clear(err);
    for (size_t i = 0; i < img->n; i++) {
        tg_image_source_t s;
        tg_hash128_t h;
        int found;
        tg_image_source(img, i, &s);
        if (s.path_len == 0)
            continue; /* compiled from a text: nothing to compare with */
        if (s.path_len >= sizeof path || memchr(s.path, '\0', s.path_len))
            return tg_fail(err, TG_E_IMAGE, TG_NO_OFFSET,
                           "registry image source %zu: a path that cannot be a file's", i);
        memcpy(path, s.path, s.path_len);
        path[s.path_len] = '\0';
        found = hash_file(img->e, path, &h);
        if (found < 0)
            return tg_fail(err, TG_E_IMAGE_STALE, TG_NO_OFFSET,
                           "registry image: its source %s cannot be read to check it", path);
        if (found && (h.hi != s.hash.hi || h.lo != s.hash.lo))
            return tg_fail(err, TG_E_IMAGE_STALE, TG_NO_OFFSET,
                           "registry image is stale: %s changed since it was compiled "
                           "(toolgate registry compile again)",
                           path);
    }
    return TG_OK;
}
