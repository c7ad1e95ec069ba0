/*
 * tg_hash.c -- XXH3 hashing and the hex form of a 128-bit hash.  xxhash.h
 * is included with XXH_INLINE_ALL so the hash inlines here and no XXH_*
 * symbol leaves the library (a host that links its own xxHash cannot clash
 * with ours).
 *
 * Inputs past 240 bytes go through XXH3's vector loop.  The library is
 * built for baseline x86-64, where xxhash.h picks its SSE2 loop; on x86-64
 * with GCC or Clang its AVX2 loop is compiled as well, in functions marked
 * for AVX2, and taken when the CPU has AVX2.  Both loops compute the same
 * hash (spec/c/test_hash.c): only the speed differs.
 */
#include "tg_internal.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__AVX2__)
#define TG_HASH_AVX2 1
/* every intrinsic is declared whatever the -m flags; a function may use
 * those of its own target attribute */
#include <immintrin.h>
/* xxhash.h's AVX2 kernels besides the SSE2 ones it picks for the build,
 * each marked for AVX2 */
#define XXH_DISPATCH_AVX2 1
#define XXH_TARGET_AVX2 __attribute__((target("avx2")))
/* the AVX2 kernels keep the accumulators in aligned 32-byte vectors (the
 * SSE2 build's default is 16) */
#define XXH_ACC_ALIGN 32
#else
#define TG_HASH_AVX2 0
#endif

#define XXH_INLINE_ALL
#include <xxhash.h>

/* The AVX2 loop is reached through xxhash.h's internal functions, whose
 * names and arguments are those of xxHash 0.8.1 (Debian 12's): another
 * release (0.8.2 changed them) keeps the loop the build picked. */
#if TG_HASH_AVX2 && XXH_VERSION_NUMBER != 801
#undef TG_HASH_AVX2
#define TG_HASH_AVX2 0
#endif

#if defined(__SSE2__) && defined(__GNUC__)
#include <emmintrin.h>
#endif

#if TG_HASH_AVX2
/* XXH3's loop for inputs past XXH3_MIDSIZE_MAX bytes with its default
 * secret (seed 0), on the AVX2 kernels.  Not inlined: the callers are not
 * compiled for AVX2.  The explicit vzeroupper: GCC 12 leaves it out here
 * (the accumulators are merged by a call it knows keeps the vector
 * registers), and SSE code run while the upper halves are dirty pays for
 * them (a state switch on older Intel cores, a false dependency on every
 * instruction on newer ones). */
__attribute__((target("avx2"))) static XXH128_hash_t long128_avx2(const void *data, size_t len)
{
    XXH128_hash_t h = XXH3_hashLong_128b_internal(data, len, XXH3_kSecret, sizeof XXH3_kSecret,
                                                  XXH3_accumulate_512_avx2, XXH3_scrambleAcc_avx2);
    _mm256_zeroupper();
    return h;
}

__attribute__((target("avx2"))) static XXH64_hash_t long64_avx2(const void *data, size_t len)
{
    XXH64_hash_t h = XXH3_hashLong_64b_internal(data, len, XXH3_kSecret, sizeof XXH3_kSecret,
                                                XXH3_accumulate_512_avx2, XXH3_scrambleAcc_avx2);
    _mm256_zeroupper();
    return h;
}

/* The long-input loops XXH3_128bits and XXH3_64bits are given below, in
 * place of their defaults, so shorter inputs run exactly as before and
 * only long ones ask the CPU.  __builtin_cpu_supports reads what libgcc's
 * constructor found once, at load time, before any caller (CPUID, and
 * whether the OS saves the AVX registers): one load and a test, nothing
 * of ours written, so any number of threads may ask at once. */
static XXH128_hash_t long128(const void *data, size_t len, XXH64_hash_t seed, const void *secret,
                             size_t secret_len)
{
    if (__builtin_cpu_supports("avx2"))
        return long128_avx2(data, len);
    return XXH3_hashLong_128b_default(data, len, seed, secret, secret_len);
}

static XXH64_hash_t long64(const void *data, size_t len, XXH64_hash_t seed, const xxh_u8 *secret,
                           size_t secret_len)
{
    if (__builtin_cpu_supports("avx2"))
        return long64_avx2(data, len);
    return XXH3_hashLong_64b_default(data, len, seed, secret, secret_len);
}
#endif

void tg_hash128(const void *data, size_t len, tg_hash128_t *out)
{
#if TG_HASH_AVX2
    XXH128_hash_t h =
        XXH3_128bits_internal(data, len, 0, XXH3_kSecret, sizeof XXH3_kSecret, long128);
#else
    XXH128_hash_t h = XXH3_128bits(data, len);
#endif
    out->hi = h.high64;
    out->lo = h.low64;
}

uint64_t tg_hash64(const void *data, size_t len)
{
#if TG_HASH_AVX2
    return XXH3_64bits_internal(data, len, 0, XXH3_kSecret, sizeof XXH3_kSecret, long64);
#else
    return XXH3_64bits(data, len);
#endif
}

const char *tg_hash_loop(void)
{
#if TG_HASH_AVX2
    if (__builtin_cpu_supports("avx2"))
        return "avx2";
#endif
    switch (XXH_VECTOR) {
    case XXH_SSE2:
        return "sse2";
    case XXH_AVX2:
        return "avx2";
    case XXH_AVX512:
        return "avx512";
    case XXH_NEON:
        return "neon";
    case XXH_VSX:
        return "vsx";
    default:
        return "scalar";
    }
}

/* clang-format off */
/* "00".."ff": one load gives both digits of a byte (SSE2 is x86-64's
 * baseline, so this serves other machines). */
static const char hex_pairs[513] =
    "000102030405060708090a0b0c0d0e0f"
    "101112131415161718191a1b1c1d1e1f"
    "202122232425262728292a2b2c2d2e2f"
    "303132333435363738393a3b3c3d3e3f"
    "404142434445464748494a4b4c4d4e4f"
    "505152535455565758595a5b5c5d5e5f"
    "606162636465666768696a6b6c6d6e6f"
    "707172737475767778797a7b7c7d7e7f"
    "808182838485868788898a8b8c8d8e8f"
    "909192939495969798999a9b9c9d9e9f"
    "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf"
    "b0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
    "c0c1c2c3c4c5c6c7c8c9cacbcccdcecf"
    "d0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
    "e0e1e2e3e4e5e6e7e8e9eaebecedeeef"
    "f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
/* clang-format on */

void tg_hash128_hex_portable(const tg_hash128_t *h, char out[TG_HASH_HEX])
{
    for (int i = 0; i < 8; i++) {
        memcpy(out + 2 * i, hex_pairs + 2 * ((h->hi >> (56 - 8 * i)) & 255), 2);
        memcpy(out + 16 + 2 * i, hex_pairs + 2 * ((h->lo >> (56 - 8 * i)) & 255), 2);
    }
    out[32] = '\0';
}

#if defined(__SSE2__) && defined(__GNUC__)
/* Every decision prints its arguments' digest.  All 32 digits at once in
 * two vectors: 32 instructions, where the pair table above takes 126 and a
 * loop over the nibbles took 230. */
void tg_hash128_hex(const tg_hash128_t *h, char out[TG_HASH_HEX])
{
    /* the 16 bytes in print order: each half big-endian, the high half first */
    __m128i bytes =
        _mm_set_epi64x((long long)__builtin_bswap64(h->lo), (long long)__builtin_bswap64(h->hi));
    __m128i low4 = _mm_set1_epi8(15);
    __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), low4);
    __m128i low = _mm_and_si128(bytes, low4);
    /* each byte's high nibble before its low one: digits 0..15, then 16..31 */
    __m128i nibbles[2] = {_mm_unpacklo_epi8(high, low), _mm_unpackhi_epi8(high, low)};

    for (int i = 0; i < 2; i++) {
        /* '0' + n, and 'a' - '0' - 10 more where n > 9 (n is 0..15, so the
         * signed compare is safe) */
        __m128i letter = _mm_cmpgt_epi8(nibbles[i], _mm_set1_epi8(9));
        __m128i digit = _mm_add_epi8(nibbles[i], _mm_set1_epi8('0'));
        digit = _mm_add_epi8(digit, _mm_and_si128(letter, _mm_set1_epi8('a' - '0' - 10)));
        _mm_storeu_si128((__m128i *)(void *)(out + 16 * i), digit);
    }
    out[32] = '\0';
}
#else
void tg_hash128_hex(const tg_hash128_t *h, char out[TG_HASH_HEX])
{
    tg_hash128_hex_portable(h, out);
}
#endif

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
