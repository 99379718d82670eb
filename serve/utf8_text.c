/* JSON strings of generated text (utf8_text.h). */
#include "utf8_text.h"

#include <stdio.h>

#include "utf8.h"

void sq_json_text(sq_strbuf *sb, const char *p, size_t n)
{
    const unsigned char *u = (const unsigned char *)p;
    sq_sb_append(sb, "\"", 1);
    size_t run = 0; /* bytes copied as they are, pending */
    for (size_t i = 0; i < n;) {
        bool bad, cut;
        const unsigned char c = u[i];
        const char *esc = NULL;
        char ubuf[8];
        size_t k;
        if (c == '"')
            esc = "\\\"", k = 1;
        else if (c == '\\')
            esc = "\\\\", k = 1;
        else if (c == '\n')
            esc = "\\n", k = 1;
        else if (c == '\r')
            esc = "\\r", k = 1;
        else if (c == '\t')
            esc = "\\t", k = 1;
        else if (c < 0x20 || c == 0x7F) {
            snprintf(ubuf, sizeof ubuf, "\\u%04x", c);
            esc = ubuf, k = 1;
        } else {
            k = sq_utf8_seq(u + i, n - i, &bad, &cut);
            if (bad)
                esc = "\\ufffd";
        }
        if (esc) {
            sq_sb_append(sb, p + i - run, run);
            run = 0;
            sq_sb_printf(sb, "%s", esc);
        } else {
            run += k;
        }
        i += k;
    }
    sq_sb_append(sb, p + n - run, run);
    sq_sb_append(sb, "\"", 1);
}
