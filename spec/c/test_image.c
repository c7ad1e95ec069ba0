/*
 * test_image.c -- registry images (core/tg_image.c): written and read back
 * field for field; every byte flipped and every truncation refused
 * TG_E_IMAGE; a sealed image whose offsets point outside it refused; the
 * version and ABI checked; max_registry_bytes at N and N + 1; mapped from
 * a file; stale sources found; every allocation failed in turn gives
 * everything back.
 */
#define _POSIX_C_SOURCE 200809L /* tg_internal.h names locale_t; mkdtemp */
#include <stdlib.h>
#include <unistd.h>

#include "acct.h"
#include "tap.h"
#include "tg_internal.h" /* tg_image_seal */

static const char REG_A[] =
    "{\"server\":\"fs\",\"tools\":[{\"name\":\"read\",\"inputSchema\":{}}]}";
static const char REG_B[] = "[]";

static void sources(tg_image_source_t s[2])
{
    memset(s, 0, 2 * sizeof *s);
    s[0].text = REG_A;
    s[0].text_len = strlen(REG_A);
    s[0].server = "fs";
    s[0].server_len = 2;
    s[0].label = "a.json";
    s[0].label_len = 6;
    s[0].path = "";
    s[0].format = 4;
    s[0].trusted = 1;
    s[1].text = REG_B;
    s[1].text_len = strlen(REG_B);
    s[1].label = "b.json";
    s[1].label_len = 6;
    s[1].format = 0;
    s[1].trusted = 0;
}

static int opens(tg_engine_t *e, const char *data, size_t len, int *code)
{
    tg_image_t *img = NULL;
    tg_error_t err;
    int rc = tg_image_open(e, data, len, &img, &err);
    *code = rc;
    tg_image_free(img);
    return rc == TG_OK;
}

int main(void)
{
    tg_error_t err;
    tg_engine_t *e = tg_engine_new(NULL, NULL, NULL, &err);
    tg_image_source_t src[2], got;
    tg_buf_t out;
    tg_image_t *img = NULL;
    int code;

    sources(src);
    tg_buf_init(&out, e);
    tap_ok(tg_image_write(e, src, 2, &out, &err) == TG_OK, "an image of two sources is written");
    tap_ok(tg_image_is(out.data, out.len) && !tg_image_is("{}", 2), "its magic tells it from JSON");
    tap_ok(tg_image_open(e, out.data, out.len, &img, &err) == TG_OK && tg_image_count(img) == 2,
           "it opens with its two sources");
    if (img) {
        tg_hash128_t h;
        tg_image_source(img, 0, &got);
        tg_hash128(REG_A, strlen(REG_A), &h);
        tap_ok(got.text_len == strlen(REG_A) && memcmp(got.text, REG_A, got.text_len) == 0 &&
                   got.server && got.server_len == 2 && memcmp(got.server, "fs", 2) == 0 &&
                   got.label_len == 6 && got.path_len == 0 && got.format == 4 && got.trusted &&
                   got.hash.hi == h.hi && got.hash.lo == h.lo,
               "source 1 reads back field for field, with its hash");
        tg_image_source(img, 1, &got);
        tap_ok(got.server == NULL && got.format == 0 && !got.trusted && got.text_len == 2,
               "source 2: no server, untrusted, auto");
        tap_ok(tg_image_source(img, 2, &got) == TG_E_ARG, "a source past the last is TG_E_ARG");
        tap_ok(tg_image_check_sources(img, &err) == TG_OK,
               "sources compiled from texts are never stale");
        tg_image_free(img);
    }

    {
        int all = 1, trunc = 1;
        char *bad = malloc(out.len);
        for (size_t i = 0; i < out.len; i++) {
            memcpy(bad, out.data, out.len);
            bad[i] ^= (char)(1 + i % 255);
            if (opens(e, bad, out.len, &code) || code != TG_E_IMAGE) {
                printf("#   byte %zu: %s\n", i, tg_code_name(code));
                all = 0;
            }
        }
        tap_ok(all, "every byte flipped: TG_E_IMAGE");
        for (size_t n = 0; n < out.len; n++)
            if (opens(e, out.data, n, &code) || code != TG_E_IMAGE)
                trunc = 0;
        tap_ok(trunc, "every truncation: TG_E_IMAGE");

        /* sealed (checksum right) but lying: the checks behind the checksum */
        memcpy(bad, out.data, out.len);
        bad[8] = 2;
        tg_image_seal((unsigned char *)bad, out.len);
        tap_ok(!opens(e, bad, out.len, &code) && code == TG_E_IMAGE, "another format version");
        memcpy(bad, out.data, out.len);
        bad[12] = 9;
        tg_image_seal((unsigned char *)bad, out.len);
        tap_ok(!opens(e, bad, out.len, &code) && code == TG_E_IMAGE, "another ABI");
        memcpy(bad, out.data, out.len);
        bad[24] = (char)0xff; /* 255 sources: the directory runs past the end */
        tg_image_seal((unsigned char *)bad, out.len);
        tap_ok(!opens(e, bad, out.len, &code) && code == TG_E_IMAGE, "a directory past the end");
        for (int field = 0; field < 4; field++) {
            char name[64];
            memcpy(bad, out.data, out.len);
            memset(bad + 64 + 16 * field + 8, 0xff, 8); /* a length of 2^64 - 1 */
            tg_image_seal((unsigned char *)bad, out.len);
            snprintf(name, sizeof name, "field %d's length past the end", field);
            tap_ok(!opens(e, bad, out.len, &code) && code == TG_E_IMAGE, name);
        }
        memcpy(bad, out.data, out.len);
        bad[64 + 80] = 5;
        tg_image_seal((unsigned char *)bad, out.len);
        tap_ok(!opens(e, bad, out.len, &code) && code == TG_E_IMAGE, "an unknown format");
        memcpy(bad, out.data, out.len);
        bad[64 + 84] = 4;
        tg_image_seal((unsigned char *)bad, out.len);
        tap_ok(!opens(e, bad, out.len, &code) && code == TG_E_IMAGE, "an unknown flag");
        free(bad);
    }

    {
        tg_limits_t lim;
        tg_limits_default(&lim);
        lim.max_registry_bytes = out.len;
        tg_engine_set_limits(e, &lim, &err);
        tap_ok(opens(e, out.data, out.len, &code), "max_registry_bytes N: opens");
        lim.max_registry_bytes = out.len - 1;
        tg_engine_set_limits(e, &lim, &err);
        tap_ok(!opens(e, out.data, out.len, &code) && code == TG_E_REGISTRY_TOO_LARGE,
               "max_registry_bytes N - 1: TG_E_REGISTRY_TOO_LARGE");
        {
            tg_doc_t *doc = NULL;
            int at, past;
            lim.max_registry_bytes = strlen(REG_A);
            lim.max_input_bytes = 8; /* a registry is not a call */
            tg_engine_set_limits(e, &lim, &err);
            at = tg_parse_registry(e, REG_A, strlen(REG_A), &doc, &err);
            tg_doc_free(doc);
            lim.max_registry_bytes = strlen(REG_A) - 1;
            tg_engine_set_limits(e, &lim, &err);
            past = tg_parse_registry(e, REG_A, strlen(REG_A), &doc, &err);
            tap_ok(at == TG_OK && past == TG_E_REGISTRY_TOO_LARGE && doc == NULL &&
                       strstr(err.message, "max_registry_bytes") != NULL,
                   "tg_parse_registry: N bytes parse past max_input_bytes, N + 1 is "
                   "TG_E_REGISTRY_TOO_LARGE naming the limit");
        }
        tg_limits_default(&lim);
        tg_engine_set_limits(e, &lim, &err);
    }

    {
        char dir[] = "/tmp/toolgate-test-image-XXXXXX", image[128], source[128];
        tg_image_source_t s[2];
        tg_buf_t b;
        FILE *f;
        int ok = mkdtemp(dir) != NULL;
        snprintf(image, sizeof image, "%s/r.tgimg", dir);
        snprintf(source, sizeof source, "%s/r.json", dir);
        f = fopen(source, "wb");
        fputs(REG_A, f);
        fclose(f);
        sources(s);
        s[0].path = source;
        s[0].path_len = strlen(source);
        tg_buf_init(&b, e);
        ok = ok && tg_image_write(e, s, 1, &b, &err) == TG_OK;
        f = fopen(image, "wb");
        fwrite(b.data, 1, b.len, f);
        fclose(f);
        ok = ok && tg_image_map(e, image, &img, &err) == TG_OK && tg_image_count(img) == 1;
        tap_ok(ok, "an image file is mapped");
        tap_ok(ok && tg_image_check_sources(img, &err) == TG_OK, "its unchanged source: not stale");
        f = fopen(source, "wb");
        fputs(REG_B, f);
        fclose(f);
        tap_ok(ok && tg_image_check_sources(img, &err) == TG_E_IMAGE_STALE,
               "its source changed: TG_E_IMAGE_STALE");
        unlink(source);
        tap_ok(ok && tg_image_check_sources(img, &err) == TG_OK,
               "its source gone: the image stands alone");
        tg_image_free(img);
        img = NULL;
        tap_ok(tg_image_map(e, source, &img, &err) == TG_E_IO && img == NULL, "no file: TG_E_IO");
        unlink(image);
        rmdir(dir);
        tg_buf_free(&b);
    }
    tg_buf_free(&out);
    tg_engine_free(e);

    {
        acct a = {0};
        int all = 1;
        tg_engine_t *ea = tg_engine_new(NULL, acct_alloc, &a, &err);
        long base = a.live;
        for (long k = 1; k < 20; k++) {
            tg_buf_t b;
            tg_image_t *im = NULL;
            int rc;
            tg_buf_init(&b, ea);
            a.calls = 0;
            a.fail_at = k;
            a.fired = 0;
            rc = tg_image_write(ea, src, 2, &b, &err);
            if (rc == TG_OK)
                rc = tg_image_open(ea, b.data, b.len, &im, &err);
            a.fail_at = 0;
            if (rc != TG_OK && (rc != TG_E_NOMEM || !a.fired))
                all = 0;
            tg_image_free(im);
            tg_buf_free(&b);
            if (a.live != base)
                all = 0;
        }
        tap_ok(all, "each allocation failed in turn: TG_E_NOMEM, every byte given back");
        tg_engine_free(ea);
    }
    return tap_done();
}
