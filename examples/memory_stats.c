/*
 * memory_stats.c — the caching allocator's statistics before and after
 * empty_cache; the C version of
 *
 *   x = torch.randn(1024, 1024, device=dev)
 *   print(torch.cuda.memory_allocated(), torch.cuda.memory_reserved())
 *   del x
 *   print(torch.cuda.memory_allocated(), torch.cuda.memory_reserved())
 *   torch.cuda.empty_cache()
 *   print(torch.cuda.memory_reserved()); print(torch.cuda.memory_summary())
 *
 * Usage: memory_stats [device]   (on the CPU, which does not cache, all are 0)
 */
#include <stdio.h>

#include <ctorch/ctorch.h>

static void show(const char *when, ct_device dev) {
    printf("%-22s allocated %10lld B   reserved %10lld B   peak allocated %10lld B\n", when,
           (long long)ct_memory_allocated(dev), (long long)ct_memory_reserved(dev),
           (long long)ct_max_memory_allocated(dev));
}

int main(int argc, char **argv) {
    ct_device dev = ct_best_device();
    if (argc > 1 && ct_device_parse(argv[1], &dev) != CT_OK) {
        fprintf(stderr, "%s\n", ct_last_error());
        return 2;
    }
    show("at start", dev);
    ct_tensor *x = ct_randn(CT_SHAPE(1024, 1024), .device = dev);
    if (!x) {
        fprintf(stderr, "%s\n", ct_last_error());
        return 1;
    }
    show("with a 4 MiB tensor", dev);
    ct_release(x);
    show("after releasing it", dev);
    ct_empty_cache(dev);
    show("after empty_cache", dev);
    char summary[8192];
    if (ct_memory_summary(dev, true, summary, sizeof summary) >= 0) fputs(summary, stdout);
    return 0;
}
