/* Preloaded by bench/valgrind-unit.sh into each test under memcheck.
 * GRegex (G_REGEX_OPTIMIZE, as the redaction rules ask) runs PCRE2's JIT,
 * whose machine code memcheck can't follow: its 16-byte reads past a
 * subject's end, which never cross a page, come out as invalid reads and
 * uninitialised jumps at "???". Said unavailable here, the JIT leaves
 * GRegex on PCRE2's interpreter, same answers, code memcheck can see. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

int
pcre2_jit_compile(pcre2_code *code, uint32_t options)
{
    return PCRE2_ERROR_JIT_BADOPTION;
}
