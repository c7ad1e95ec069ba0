/*
 * canon.c -- the toolgate C library from a C program: the canonical form
 * and the XXH3-128 hash of each JSON document given as an argument.
 *
 *   cc canon.c $(pkg-config --cflags --libs toolgate) -o canon
 *   ./canon '{"b":[1.0,2e21],"a":"x"}' '{"a":1,"a":2}'
 *
 * prints, for each argument, its canonical form and hash, or the error's
 * code, byte offset and message; exits 1 if any document was refused.
 */
#include <stdio.h>
#include <string.h>

#include <toolgate.h>

int main(int argc, char **argv)
{
    tg_error_t err;
    tg_engine_t *e = tg_engine_new(NULL, NULL, NULL, &err); /* default limits, malloc */
    tg_buf_t out;
    int i, status = 0;

    if (!e) {
        fprintf(stderr, "canon: %s: %s\n", tg_code_name(err.code), err.message);
        return 2;
    }
    tg_buf_init(&out, e);
    for (i = 1; i < argc; i++) {
        tg_hash128_t h;
        char hex[TG_HASH_HEX];
        tg_buf_reset(&out);
        if (tg_canon(e, argv[i], strlen(argv[i]), &out, &err) != TG_OK) {
            printf("%s at byte %zu: %s\n", tg_code_name(err.code), err.offset, err.message);
            status = 1;
            continue;
        }
        tg_hash128(out.data, out.len, &h); /* the hash of the canonical bytes */
        tg_hash128_hex(&h, hex);
        printf("%.*s %s\n", (int)out.len, out.data, hex);
    }
    tg_buf_free(&out);
    tg_engine_free(e);
    return status;
}
