/*
 * tg_pointer.c -- JSON Pointers (RFC 6901) as toolgate writes them into
 * fixed buffers: the findings of a validation, the schema locations of
 * compile errors, the pointers of an agreement report.  One escaping rule
 * and one way to cut a pointer that does not fit, for all of them.
 */
#include "tg_internal.h"

#include <string.h>

size_t tg_ptr_escaped_len(const char *s, size_t n)
{
    size_t k = n;
    for (size_t i = 0; i < n; i++)
        k += s[i] == '~' || s[i] == '/';
    return k;
}

char *tg_ptr_escape(char *w, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '~' || s[i] == '/') {
            *w++ = '~';
            *w++ = s[i] == '~' ? '0' : '1';
        } else {
            *w++ = s[i];
        }
    }
    return w;
}

void tg_pw_init(tg_ptr_writer *w, char *out, size_t cap)
{
    w->out = out;
    w->cap = cap;
    w->len = w->keep = 0;
    w->cut = 0;
}

void tg_pw_seg(tg_ptr_writer *w, const char *seg, size_t n, int raw)
{
    size_t need;
    if (w->cut)
        return;
    need = 1 + (raw ? n : tg_ptr_escaped_len(seg, n));
    if (need > w->cap - 1 - w->len) {
        w->cut = 1;
        return;
    }
    w->out[w->len++] = '/';
    if (raw) {
        memcpy(w->out + w->len, seg, n);
        w->len += n;
    } else {
        w->len = (size_t)(tg_ptr_escape(w->out + w->len, seg, n) - w->out);
    }
    if (w->len + 4 <= w->cap - 1)
        w->keep = w->len;
}

void tg_pw_index(tg_ptr_writer *w, size_t i)
{
    char digits[20];
    tg_pw_seg(w, digits, (size_t)tg_u64_text(i, digits), 1);
}

void tg_pw_escaped(tg_ptr_writer *w, const char *ptr, size_t len)
{
    size_t i = 0;
    while (i < len) {
        size_t start = ++i; /* past the '/' */
        while (i < len && ptr[i] != '/')
            i++;
        tg_pw_seg(w, ptr + start, i - start, 1);
    }
}

void tg_pw_end(tg_ptr_writer *w)
{
    if (w->cut) {
        w->len = w->keep;
        memcpy(w->out + w->len, "/...", 4);
        w->len += 4;
    }
    w->out[w->len] = '\0';
}

void tg_pointer_write(char *out, size_t cap, const char *ptr, size_t len, const char *seg,
                      size_t seg_len)
{
    tg_ptr_writer w;
    tg_pw_init(&w, out, cap);
    tg_pw_escaped(&w, ptr, len);
    if (seg)
        tg_pw_seg(&w, seg, seg_len, 0);
    tg_pw_end(&w);
}
