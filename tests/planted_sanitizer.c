/* Built only in sanitizer builds, where meson expects each run to fail: the
 * proof that a report of each kind stops the run (and so fails CI). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "ub")) {          /* signed overflow: UBSan, halt_on_error */
        volatile int x = INT_MAX - 1;
        x += argc;
        printf("%d\n", x);
    } else if (!strcmp(mode, "overflow")) {   /* heap overflow: ASan */
        volatile char *p = malloc(8);
        p[8 + argc - 2] = 1;
        free((void *)p);
    } else if (!strcmp(mode, "leak")) {       /* a lost block: LeakSanitizer */
        volatile char *p = malloc(64);
        p[0] = 1;
        p = NULL;
    }
    return 0;
}
