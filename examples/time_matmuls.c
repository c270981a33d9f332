/*
 * time_matmuls.c — timing asynchronous work with events (workload W3); the C
 * version of
 *
 *   start = torch.cuda.Event(enable_timing=True); end = torch.cuda.Event(enable_timing=True)
 *   start.record()
 *   for _ in range(100): torch.randn(1000, 1000, device=dev).mm(torch.randn(1000, 1000, device=dev))
 *   end.record(); torch.cuda.synchronize()
 *   print(start.elapsed_time(end) / 1000, "s")
 *
 * Usage: time_matmuls [device] [iterations]   (default: the best device, 100)
 */
#include <stdio.h>
#include <stdlib.h>

#include <ctorch/ctorch.h>

int main(int argc, char **argv) {
    ct_device dev = ct_best_device();
    if (argc > 1 && ct_device_parse(argv[1], &dev) != CT_OK) {
        fprintf(stderr, "%s\n", ct_last_error());
        return 2;
    }
    int iters = argc > 2 ? atoi(argv[2]) : 100;
    ct_event *start = ct_event_create(.enable_timing = true), *end = ct_event_create(.enable_timing = true);
    ct_stream *stream = ct_current_stream(dev);
    if (!stream) {
        fprintf(stderr, "%s\n", ct_last_error());
        return 1;
    }
    ct_event_record(start, stream);
    for (int i = 0; i < iters; i++) CT_SCOPE {     /* each iteration's tensors are released */
        ct_mm(ct_randn(CT_SHAPE(1000, 1000), .device = dev), ct_randn(CT_SHAPE(1000, 1000), .device = dev));
    }
    ct_event_record(end, stream);
    ct_device_synchronize(dev);
    float ms = 0;
    if (ct_event_elapsed_time(start, end, &ms) != CT_OK) {
        fprintf(stderr, "%s\n", ct_last_error());
        return 1;
    }
    char name[32];
    printf("%d x (randn 1000x1000 mm randn 1000x1000) on %s: %.3f s\n", iters, ct_device_format(dev, name, sizeof name),
           ms / 1000.0);
    ct_event_destroy(start);
    ct_event_destroy(end);
    return 0;
}
