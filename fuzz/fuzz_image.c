/*
 * fuzz_image.c -- the registry image loader (core/tg_image.c) on any bytes.
 *
 * Each input is opened twice: as it is (nearly always refused at the
 * checksum), and sealed -- its length field and checksum rewritten to
 * match -- so the checks behind the checksum (version, ABI, directory,
 * every offset and length, formats, flags) meet hostile values too.
 * Invariants: the loader returns TG_OK, TG_E_IMAGE or TG_E_NOMEM and never
 * reads outside the input; an opened image's every source lies inside the
 * input, and its text parses or is refused with a code (never a crash).
 * The sources' files are never looked at (tg_image_check_sources reads the
 * file system: not a fuzzer's business).
 */
#define _POSIX_C_SOURCE 200809L /* tg_internal.h names locale_t */
#include "fuzz.h"
#include "tg_internal.h" /* tg_image_seal */

static void open_and_walk(tg_engine_t *e, const uint8_t *data, size_t size)
{
    tg_image_t *img = NULL;
    tg_error_t err;
    int rc = tg_image_open(e, data, size, &img, &err);

    if (rc != TG_OK) {
        fuzz_check_error(&err, rc);
        FUZZ_CHECK(rc == TG_E_IMAGE || rc == TG_E_NOMEM || rc == TG_E_REGISTRY_TOO_LARGE);
        FUZZ_CHECK(img == NULL);
        return;
    }
    for (size_t i = 0; i < tg_image_count(img); i++) {
        tg_image_source_t s;
        const char *lo = (const char *)data, *hi = (const char *)data + size;
        tg_doc_t *doc = NULL;
        FUZZ_CHECK(tg_image_source(img, i, &s) == TG_OK);
        FUZZ_CHECK(s.text >= lo && s.text_len <= (size_t)(hi - s.text));
        FUZZ_CHECK(s.label >= lo && s.label_len <= (size_t)(hi - s.label));
        FUZZ_CHECK(s.path >= lo && s.path_len <= (size_t)(hi - s.path));
        FUZZ_CHECK(!s.server || (s.server >= lo && s.server_len <= (size_t)(hi - s.server)));
        FUZZ_CHECK(s.format >= 0 && s.format <= 4);
        if (tg_parse_registry(e, s.text, s.text_len, &doc, &err) == TG_OK)
            tg_doc_free(doc);
    }
    tg_image_free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_engine_t *e = fuzz_engine();
    uint8_t *sealed;

    open_and_walk(e, data, size);
    sealed = malloc(size ? size : 1);
    if (!sealed)
        return 0;
    memcpy(sealed, data, size);
    tg_image_seal(sealed, size);
    open_and_walk(e, sealed, size);
    free(sealed);
    return 0;
}
