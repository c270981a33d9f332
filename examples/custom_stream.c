/*
 * custom_stream.c — running work on a stream of your own; the C version of
 *
 *   s = torch.cuda.Stream()
 *   s.wait_stream(torch.cuda.current_stream())    # inputs were made on the current stream
 *   with torch.cuda.stream(s):
 *       y = x @ x
 *   torch.cuda.current_stream().wait_stream(s)    # before using y on the current stream
 *   y.record_stream(torch.cuda.current_stream())
 *
 * Usage: custom_stream [device]
 */
#include <stdio.h>

#include <ctorch/ctorch.h>

int main(int argc, char **argv) {
    ct_device dev = ct_best_device();
    if (argc > 1 && ct_device_parse(argv[1], &dev) != CT_OK) {
        fprintf(stderr, "%s\n", ct_last_error());
        return 2;
    }
    ct_stream *s = ct_stream_create(dev, 0);
    ct_stream *main_stream = ct_current_stream(dev);
    if (!s || !main_stream) {
        fprintf(stderr, "%s\n", ct_last_error());
        return 1;
    }
    CT_SCOPE {
        ct_tensor *x = ct_ones(CT_SHAPE(512, 512), .device = dev);
        ct_tensor *y = NULL;
        ct_stream_wait_stream(s, main_stream);
        CT_WITH_STREAM(s) { y = ct_matmul(x, x); }
        ct_stream_wait_stream(main_stream, s);
        ct_record_stream(y, main_stream);
        double v = ct_item(ct_select(ct_select(y, 0, 0), 0, 0)); /* waits for the current stream */
        ct_stream_synchronize(s);
        printf("y[0][0] = %g (expected 512), computed on a side stream; side stream idle: %s\n", v,
               ct_stream_query(s) ? "yes" : "no");
    }
    ct_stream_destroy(s);
    return 0;
}
