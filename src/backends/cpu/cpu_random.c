/*
 * cpu_random.c — random tensors on the CPU from the shared Philox mapping
 * (src/kernels/philox.h), element by element so that the result is the same
 * for any number of threads.
 */
#include "cpu_internal.h"
#include "kernels/philox.h"

ct_status ct_cpu_random(const ct_kview *dst, ct_random_kind kind, uint64_t seed, uint64_t offset, double a,
                        double b);

ct_status ct_cpu_random(const ct_kview *dst, ct_random_kind kind, uint64_t seed, uint64_t offset, double a,
                        double b) {
    int64_t n = ct_cpu_numel(dst);
    char *base = ct_cpu_base(dst);
    size_t es = ct_dtype_size(dst->dtype);
    ct_dtype dt = dst->dtype;
    uint64_t range = (uint64_t)((int64_t)b - (int64_t)a);
    int bits = dt == CT_FLOAT16 ? 11 : dt == CT_BFLOAT16 ? 8 : 24; /* mantissa bits incl. implicit */
    /* Elements 2j and 2j+1 share Philox block offset + j: compute it once. */
    int64_t npairs = (n + 1) / 2;
#pragma omp parallel for if (n >= CT_CPU_GRAIN / 4) schedule(static)
    for (int64_t j = 0; j < npairs; j++) {
        uint32_t r[4];
        uint64_t block = offset + (uint64_t)j;
        ct_philox4x32_10((uint32_t)block, (uint32_t)(block >> 32), 0u, 0u, (uint32_t)seed, (uint32_t)(seed >> 32), r);
        for (int64_t i = 2 * j; i < 2 * j + 2 && i < n; i++) {
            uint32_t x0 = r[(i & 1) * 2], x1 = r[(i & 1) * 2 + 1];
            void *p = base + i * (int64_t)es;
            switch (kind) {
            case CT_RAND_UNIFORM:
                if (dt == CT_FLOAT64)
                    *(double *)p = a + (b - a) * ct_philox_uniform_f64(x0, x1);
                else
                    ct_cpu_store(p, dt, (double)((float)a + ((float)b - (float)a) * ct_philox_uniform_bits(x0, bits)));
                break;
            case CT_RAND_NORMAL:
                ct_cpu_store(p, dt, a + b * ct_philox_normal(x0, x1));
                break;
            case CT_RAND_INT:
                ct_cpu_store_i64(p, dt, (int64_t)a + (int64_t)(ct_philox_u64(x0, x1) % range));
                break;
            }
        }
    }
    return CT_OK;
}
