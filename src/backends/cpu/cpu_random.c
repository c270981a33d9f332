/*
 * cpu_random.c — random tensors on the CPU from the shared Philox mapping
 * (src/kernels/philox.h).
 *
 * The tensor is cut into chunks of CT_RAND_BLOCKS Philox blocks (two
 * elements each). A chunk first fills arrays with the lanes of all its
 * blocks, then maps them to values, then stores those in the tensor's dtype:
 * each step is a simple loop over arrays that gcc vectorises, which the
 * element-by-element form did not allow. Every element still depends only on
 * (seed, offset, index), and threads take whole chunks, so the result is the
 * same for any number of threads.
 */
/* The values must match the device kernels bit for bit, so a * b + c must
 * never become a fused multiply-add, whatever -std or -march the library is
 * built with (philox.h does the same for clang). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "cpu_internal.h"
#include "kernels/philox.h"

ct_status ct_cpu_random(const ct_kview *dst, ct_random_kind kind, uint64_t seed, uint64_t offset, double a,
                        double b);

#define CT_RAND_BLOCKS 256

/* gcc on x86-64 Linux also builds each step below for AVX2 and AVX-512
 * machines and picks one version at load time (an ifunc): with the wider
 * vectors the loops run about twice as fast, and the values are the same
 * (no step may be fused into multiply-adds, see above). Not under
 * ThreadSanitizer: the dynamic loader runs ifunc resolvers before the TSan
 * runtime is initialised, and gcc instruments the resolvers it generates,
 * so the program would crash before main. */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__) && \
    !defined(__SANITIZE_THREAD__)
#define CT_RAND_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define CT_RAND_CLONES
#endif

/* The four 32-bit lanes of consecutive Philox blocks, lane by lane. */
typedef struct philox_lanes {
    uint32_t r0[CT_RAND_BLOCKS], r1[CT_RAND_BLOCKS], r2[CT_RAND_BLOCKS], r3[CT_RAND_BLOCKS];
} philox_lanes;

CT_RAND_CLONES static void philox_blocks(uint64_t seed, uint64_t first, int nb, philox_lanes *lanes) {
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
    for (int j = 0; j < nb; j++) {
        uint64_t block = first + (uint64_t)j;
        uint32_t r[4];
        ct_philox4x32_10((uint32_t)block, (uint32_t)(block >> 32), 0u, 0u, k0, k1, r);
        lanes->r0[j] = r[0];
        lanes->r1[j] = r[1];
        lanes->r2[j] = r[2];
        lanes->r3[j] = r[3];
    }
}

/* Element 2j in v[2j], element 2j+1 in v[2j+1]: ct_philox_normal_pair in
 * two loops. sqrt may set errno, so gcc keeps a branch around it unless
 * built with -fno-math-errno, and a loop with a branch does not vectorise:
 * the first loop, which holds nearly all the work, has no sqrt. */
CT_RAND_CLONES static void normal_values(const philox_lanes *lanes, int nb, double mean, double std,
                                         double *restrict v) {
    double t[CT_RAND_BLOCKS], c[CT_RAND_BLOCKS], s[CT_RAND_BLOCKS];
    for (int j = 0; j < nb; j++) {
        t[j] = ct_philox_radius_sq(lanes->r0[j]);
        ct_philox_sincos_grid24(lanes->r1[j] >> 8, &c[j], &s[j]);
    }
    for (int j = 0; j < nb; j++) {
        double rho = sqrt(t[j]);
        v[2 * j] = mean + std * (rho * c[j]);
        v[2 * j + 1] = mean + std * (rho * s[j]);
    }
}

CT_RAND_CLONES static void uniform_values_f64(const philox_lanes *lanes, int nb, double lo, double hi,
                                              double *restrict v) {
    for (int j = 0; j < nb; j++) {
        v[2 * j] = lo + (hi - lo) * ct_philox_uniform_f64(lanes->r0[j], lanes->r1[j]);
        v[2 * j + 1] = lo + (hi - lo) * ct_philox_uniform_f64(lanes->r2[j], lanes->r3[j]);
    }
}

/* Float32, float16 and bfloat16 draw `bits` bits and compute in float. */
CT_RAND_CLONES static void uniform_values_f32(const philox_lanes *lanes, int nb, int bits, double lo,
                                              double hi, double *restrict v) {
    float flo = (float)lo, span = (float)hi - (float)lo;
    for (int j = 0; j < nb; j++) {
        v[2 * j] = (double)(flo + span * ct_philox_uniform_bits(lanes->r0[j], bits));
        v[2 * j + 1] = (double)(flo + span * ct_philox_uniform_bits(lanes->r2[j], bits));
    }
}

CT_RAND_CLONES static void store_values(char *out, ct_dtype dt, const double *restrict v, int64_t count) {
    if (dt == CT_FLOAT32) {
        float *restrict o = (float *)out;
        for (int64_t i = 0; i < count; i++) o[i] = (float)v[i];
    } else if (dt == CT_FLOAT64) {
        memcpy(out, v, (size_t)count * sizeof(double));
    } else {
        size_t es = ct_dtype_size(dt);
        for (int64_t i = 0; i < count; i++) ct_cpu_store(out + (size_t)i * es, dt, v[i]);
    }
}

/* Integers lo + u64 % range, kept in int64 (a double would round above 2^53). */
static void store_ints(char *out, ct_dtype dt, const philox_lanes *lanes, int64_t count, int64_t lo,
                       uint64_t range) {
    size_t es = ct_dtype_size(dt);
    for (int64_t i = 0; i < count; i++) {
        int64_t j = i / 2;
        uint64_t u = i % 2 ? ct_philox_u64(lanes->r2[j], lanes->r3[j])
                           : ct_philox_u64(lanes->r0[j], lanes->r1[j]);
        ct_cpu_store_i64(out + (size_t)i * es, dt, lo + (int64_t)(u % range));
    }
}

/* Elements [2 * first_pair, 2 * first_pair + count) of the tensor at `base`. */
static void random_chunk(char *base, ct_dtype dt, ct_random_kind kind, uint64_t seed, uint64_t offset,
                         int64_t first_pair, int64_t count, double a, double b) {
    philox_lanes lanes;
    double v[2 * CT_RAND_BLOCKS];
    int nb = (int)((count + 1) / 2);
    char *out = base + 2 * first_pair * (int64_t)ct_dtype_size(dt);
    philox_blocks(seed, offset + (uint64_t)first_pair, nb, &lanes);
    switch (kind) {
    case CT_RAND_UNIFORM:
        if (dt == CT_FLOAT64)
            uniform_values_f64(&lanes, nb, a, b, v);
        else
            uniform_values_f32(&lanes, nb, dt == CT_FLOAT16 ? 11 : dt == CT_BFLOAT16 ? 8 : 24, a, b, v);
        store_values(out, dt, v, count);
        break;
    case CT_RAND_NORMAL:
        normal_values(&lanes, nb, a, b, v);
        store_values(out, dt, v, count);
        break;
    case CT_RAND_INT:
        store_ints(out, dt, &lanes, count, (int64_t)a, (uint64_t)((int64_t)b - (int64_t)a));
        break;
    }
}

ct_status ct_cpu_random(const ct_kview *dst, ct_random_kind kind, uint64_t seed, uint64_t offset, double a,
                        double b) {
    int64_t n = ct_cpu_numel(dst);
    char *base = ct_cpu_base(dst);
    int64_t npairs = (n + 1) / 2;
    int64_t nchunks = (npairs + CT_RAND_BLOCKS - 1) / CT_RAND_BLOCKS;
#pragma omp parallel for if (n >= CT_CPU_GRAIN / 4) schedule(static)
    for (int64_t c = 0; c < nchunks; c++) {
        int64_t first_pair = c * CT_RAND_BLOCKS;
        int64_t count = n - 2 * first_pair < 2 * CT_RAND_BLOCKS ? n - 2 * first_pair : 2 * CT_RAND_BLOCKS;
        random_chunk(base, dst->dtype, kind, seed, offset, first_pair, count, a, b);
    }
    return CT_OK;
}
