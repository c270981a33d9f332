/* consumer.c — the smallest user program: proves installed headers and
 * libraries work together and that the header matches the library. */
#include <ctorch/ctorch.h>
#include <stdio.h>

int main(void) {
    if (ct_version_number() != CTORCH_VERSION_NUMBER) {
        fprintf(stderr, "header %s does not match library %s\n", CTORCH_VERSION_STRING, ct_version_string());
        return 1;
    }
    double v = 0;
    CT_SCOPE {
        ct_tensor *a = ct_arange(0, 6, 1, .dtype = CT_FLOAT32);
        v = ct_item(ct_select(a, 0, 5));
    }
    printf("consumer: ctorch %s, a[5] = %g\n", ct_version_string(), v);
    return v == 5.0 ? 0 : 1;
}
