/*
 * kdefs.h — the portable kernel dialect: a thin macro layer under which
 * every device kernel (the .kh files of src/kernels/) is written once and
 * compiles both as OpenCL C 1.2 (__OPENCL_VERSION__ defined) and as CUDA C++
 * (__CUDACC__).
 *
 * It provides:
 *  - qualifiers and indices: K_KERNEL, K_FUNC (device helper function),
 *    K_GLOBAL, K_LOCAL (local/shared array declaration), K_LPTR (qualifier
 *    of a pointer into local memory: CUDA pointers are generic, OpenCL's
 *    are not), K_CONST, k_global_id() … k_num_groups() for dimension 0,
 *    k_barrier();
 *  - fixed-width types k_uchar … k_ulong, and K_HAS_FP64 with k_acc, the
 *    widest float type of the device (double when it has fp64);
 *  - the kernels' argument structs (kargs.h, shared with the host: ct_kmeta,
 *    the metadata of a strided tensor, and one per op family) and k_offset,
 *    the element offset of a flat row-major index;
 *  - bit-exact float16/bfloat16 conversions (same results as dtype.c);
 *  - loads and stores of any storage dtype as float, double or long with
 *    exactly the conversion rules of the CPU backend (cpu_internal.h:
 *    float to integer truncates, NaN gives 0, saturates at the int64 limits,
 *    then narrows with wrap-around; float64 to 16-bit goes through float).
 *
 * Buffers reach kernels as `K_GLOBAL k_uchar *` plus element offsets and a
 * runtime dtype: a uniform switch costs little and keeps one kernel per op
 * family instead of one per dtype.
 */
#ifndef CT_KERNELS_KDEFS_H
#define CT_KERNELS_KDEFS_H

#if defined(__OPENCL_VERSION__)
/* ---- OpenCL C ---------------------------------------------------------- */
/* CT_K_NO_FP64 lets tests build the float-only variant on any device. */
#if defined(cl_khr_fp64) && !defined(CT_K_NO_FP64)
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define K_HAS_FP64 1
#endif
/* Match the CPU backend, whose compiler does not fuse a * b + c. */
#pragma OPENCL FP_CONTRACT OFF

#define K_KERNEL __kernel void
#define K_FUNC static inline
#define K_GLOBAL __global
#define K_LOCAL __local
#define K_LPTR __local
#define K_CONST __constant
#define k_global_id() ((k_long)get_global_id(0))
#define k_local_id() ((int)get_local_id(0))
#define k_group_id() ((k_long)get_group_id(0))
#define k_local_size() ((int)get_local_size(0))
#define k_num_groups() ((k_long)get_num_groups(0))
#define k_barrier() barrier(CLK_LOCAL_MEM_FENCE)

typedef uchar k_uchar;
typedef char k_char; /* signed in OpenCL C */
typedef ushort k_ushort;
typedef uint k_uint;
typedef int k_int;
typedef long k_long;
typedef ulong k_ulong;

#define k_float_bits(f) as_uint(f)
#define k_bits_float(u) as_float(u)
#define k_double_bits(d) as_ulong(d)
#define k_bits_double(u) as_double(u)

#elif defined(__CUDACC__)
/* ---- CUDA C++ ---------------------------------------------------------- */
#define K_HAS_FP64 1
#define K_KERNEL extern "C" __global__ void
#define K_FUNC static __device__ __forceinline__
#define K_GLOBAL
#define K_LOCAL __shared__
#define K_LPTR
#define K_CONST const
#define k_global_id() ((k_long)blockIdx.x * (k_long)blockDim.x + (k_long)threadIdx.x)
#define k_local_id() ((int)threadIdx.x)
#define k_group_id() ((k_long)blockIdx.x)
#define k_local_size() ((int)blockDim.x)
#define k_num_groups() ((k_long)gridDim.x)
#define k_barrier() __syncthreads()

typedef unsigned char k_uchar;
typedef signed char k_char;
typedef unsigned short k_ushort;
typedef unsigned int k_uint;
typedef int k_int;
typedef long long k_long;
typedef unsigned long long k_ulong;

#define k_float_bits(f) __float_as_uint(f)
#define k_bits_float(u) __uint_as_float(u)
#define k_double_bits(d) ((k_ulong)__double_as_longlong(d))
#define k_bits_double(u) __longlong_as_double((long long)(u))

#else
#error "kdefs.h is for device compilers (OpenCL C or CUDA); host code uses ctorch/dtype.h"
#endif

/* philox.h and other shared headers skip their host includes under this. */
#define CT_KERNEL_TYPES_DEFINED 1

/* The widest float type the device computes in (reductions accumulate in
 * it). Devices without fp64 report float64 ops as unsupported on the host. */
#ifdef K_HAS_FP64
typedef double k_acc;
#else
typedef float k_acc;
#endif

#define K_LONG_MAX ((k_long)0x7fffffffffffffff)
#define K_LONG_MIN (-K_LONG_MAX - 1)

/* ct_dtype values (include/ctorch/dtype.h). */
#define CT_K_FLOAT32 1
#define CT_K_FLOAT64 2
#define CT_K_FLOAT16 3
#define CT_K_BFLOAT16 4
#define CT_K_INT32 5
#define CT_K_INT64 6
#define CT_K_UINT8 7
#define CT_K_BOOL 8
#define CT_K_INT8 9

K_FUNC int k_dtype_is_floating(int dt) { return dt >= CT_K_FLOAT32 && dt <= CT_K_BFLOAT16; }

/* ---- strided tensors ---------------------------------------------------- */

/* ct_kmeta and the other argument structs, shared with the host. */
#include "kargs.h"

/* Element offset (from the buffer start) of flat row-major index i. The host
 * merges dimensions that are contiguous in every operand, so the common
 * cases are one dimension or none. */
K_FUNC k_long k_offset(const ct_kmeta *m, k_long i) {
    if (m->ndim == 1) return m->offset + i * m->strides[0];
    k_long off = m->offset;
    for (int d = (int)m->ndim - 1; d >= 0; d--) {
        k_long n = m->shape[d];
        off += (i % n) * m->strides[d];
        i /= n;
    }
    return off;
}

/* ---- float16 / bfloat16 (bit-exact with src/core/dtype.c) ---------------- */

K_FUNC k_ushort k_float_to_half(float f) {
    k_uint x = k_float_bits(f);
    k_uint sign = (x >> 16) & 0x8000u;
    k_uint exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
    if (exp == 0xffu) /* inf or NaN (quiet, top payload bits kept) */
        return (k_ushort)(sign | 0x7c00u | (mant ? 0x200u | (mant >> 13) : 0u));
    int e = (int)exp - 127 + 15;
    if (e >= 31) return (k_ushort)(sign | 0x7c00u);
    if (e <= 0) { /* subnormal or zero */
        if (e < -10) return (k_ushort)sign;
        mant |= 0x800000u;
        int shift = 14 - e;
        k_uint h = mant >> shift;
        k_uint rem = mant & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
        if (rem > halfway || (rem == halfway && (h & 1u))) h++;
        return (k_ushort)(sign | h);
    }
    k_uint h = ((k_uint)e << 10) | (mant >> 13);
    k_uint rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* may carry into inf: correct */
    return (k_ushort)(sign | h);
}

/* Subnormal halves are built from an integer so no flush-to-zero mode can
 * lose them (the result is a normal float). */
K_FUNC float k_half_to_float(k_ushort h) {
    k_uint sign = (k_uint)(h & 0x8000u) << 16;
    k_uint exp = ((k_uint)h >> 10) & 0x1fu, mant = (k_uint)h & 0x3ffu;
    if (exp == 0x1fu) return k_bits_float(sign | 0x7f800000u | (mant << 13));
    if (exp == 0u) {
        float v = (float)mant * 5.9604644775390625e-8f;
        return sign ? -v : v;
    }
    return k_bits_float(sign | ((exp - 15u + 127u) << 23) | (mant << 13));
}

K_FUNC k_ushort k_float_to_bfloat16(float f) {
    k_uint x = k_float_bits(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return (k_ushort)((x >> 16) | 0x40u);
    x += 0x7fffu + ((x >> 16) & 1u);
    return (k_ushort)(x >> 16);
}

K_FUNC float k_bfloat16_to_float(k_ushort b) { return k_bits_float((k_uint)b << 16); }

/* ---- float to integer, as ct_cpu_double_to_i64 ------------------------- */

K_FUNC k_long k_float_to_long(float v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0f) return K_LONG_MAX;
    if (v <= -9223372036854775808.0f) return K_LONG_MIN;
    return (k_long)v;
}
#ifdef K_HAS_FP64
K_FUNC k_long k_double_to_long(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775808.0) return K_LONG_MAX;
    if (v <= -9223372036854775808.0) return K_LONG_MIN;
    return (k_long)v;
}
#endif

/* A long as float the way the CPU converts (through double when the device
 * has it, so that rounding happens in the same two steps). */
K_FUNC float k_long_to_float(k_long v) {
#ifdef K_HAS_FP64
    return (float)(double)v;
#else
    return (float)v;
#endif
}

/* ---- loads ------------------------------------------------------------------- */

#define K_AT(T, base, i) (((K_GLOBAL T *)(base))[i])

/* Element i of a buffer of dtype dt as an integer (floats convert as the
 * CPU's ct_cpu_load_i64 does). */
K_FUNC k_long k_load_long(K_GLOBAL const k_uchar *b, k_long i, int dt) {
    switch (dt) {
    case CT_K_INT32: return K_AT(const k_int, b, i);
    case CT_K_INT64: return K_AT(const k_long, b, i);
    case CT_K_UINT8: return K_AT(const k_uchar, b, i);
    case CT_K_INT8: return K_AT(const k_char, b, i);
    case CT_K_BOOL: return K_AT(const k_uchar, b, i) != 0;
    case CT_K_FLOAT32: return k_float_to_long(K_AT(const float, b, i));
    case CT_K_FLOAT16: return k_float_to_long(k_half_to_float(K_AT(const k_ushort, b, i)));
    case CT_K_BFLOAT16: return k_float_to_long(k_bfloat16_to_float(K_AT(const k_ushort, b, i)));
#ifdef K_HAS_FP64
    case CT_K_FLOAT64: return k_double_to_long(K_AT(const double, b, i));
#endif
    default: return 0;
    }
}

/* Element i as float: exact for float32/float16/bfloat16 and bool/uint8/int8. */
K_FUNC float k_load_float(K_GLOBAL const k_uchar *b, k_long i, int dt) {
    switch (dt) {
    case CT_K_FLOAT32: return K_AT(const float, b, i);
    case CT_K_FLOAT16: return k_half_to_float(K_AT(const k_ushort, b, i));
    case CT_K_BFLOAT16: return k_bfloat16_to_float(K_AT(const k_ushort, b, i));
#ifdef K_HAS_FP64
    case CT_K_FLOAT64: return (float)K_AT(const double, b, i);
#endif
    default: return k_long_to_float(k_load_long(b, i, dt));
    }
}

#ifdef K_HAS_FP64
K_FUNC double k_load_double(K_GLOBAL const k_uchar *b, k_long i, int dt) {
    switch (dt) {
    case CT_K_FLOAT64: return K_AT(const double, b, i);
    case CT_K_FLOAT32: return K_AT(const float, b, i);
    case CT_K_FLOAT16: return k_half_to_float(K_AT(const k_ushort, b, i));
    case CT_K_BFLOAT16: return k_bfloat16_to_float(K_AT(const k_ushort, b, i));
    default: return (double)k_load_long(b, i, dt);
    }
}
#endif

/* As the widest float type (what reductions accumulate in). */
K_FUNC k_acc k_load_acc(K_GLOBAL const k_uchar *b, k_long i, int dt) {
#ifdef K_HAS_FP64
    return k_load_double(b, i, dt);
#else
    return k_load_float(b, i, dt);
#endif
}

/* ---- stores ------------------------------------------------------------------ */

/* Integers narrow with wrap-around (as C casts on two's complement); every
 * other dtype gets the value converted. */
K_FUNC void k_store_long(K_GLOBAL k_uchar *b, k_long i, int dt, k_long v) {
    switch (dt) {
    case CT_K_INT32: K_AT(k_int, b, i) = (k_int)(k_uint)(k_ulong)v; break;
    case CT_K_INT64: K_AT(k_long, b, i) = v; break;
    case CT_K_UINT8: K_AT(k_uchar, b, i) = (k_uchar)(k_ulong)v; break;
    case CT_K_INT8: K_AT(k_char, b, i) = (k_char)(k_uchar)(k_ulong)v; break;
    case CT_K_BOOL: K_AT(k_uchar, b, i) = (k_uchar)(v != 0); break;
    case CT_K_FLOAT32: K_AT(float, b, i) = k_long_to_float(v); break;
    case CT_K_FLOAT16: K_AT(k_ushort, b, i) = k_float_to_half(k_long_to_float(v)); break;
    case CT_K_BFLOAT16: K_AT(k_ushort, b, i) = k_float_to_bfloat16(k_long_to_float(v)); break;
#ifdef K_HAS_FP64
    case CT_K_FLOAT64: K_AT(double, b, i) = (double)v; break;
#endif
    default: break;
    }
}

K_FUNC void k_store_float(K_GLOBAL k_uchar *b, k_long i, int dt, float v) {
    switch (dt) {
    case CT_K_FLOAT32: K_AT(float, b, i) = v; break;
    case CT_K_FLOAT16: K_AT(k_ushort, b, i) = k_float_to_half(v); break;
    case CT_K_BFLOAT16: K_AT(k_ushort, b, i) = k_float_to_bfloat16(v); break;
    case CT_K_BOOL: K_AT(k_uchar, b, i) = (k_uchar)(v != 0.0f); break;
#ifdef K_HAS_FP64
    case CT_K_FLOAT64: K_AT(double, b, i) = (double)v; break;
#endif
    default: k_store_long(b, i, dt, k_float_to_long(v)); break;
    }
}

#ifdef K_HAS_FP64
/* 16-bit results round through float first, as ct_cpu_store does. */
K_FUNC void k_store_double(K_GLOBAL k_uchar *b, k_long i, int dt, double v) {
    switch (dt) {
    case CT_K_FLOAT64: K_AT(double, b, i) = v; break;
    case CT_K_FLOAT32: K_AT(float, b, i) = (float)v; break;
    case CT_K_FLOAT16: K_AT(k_ushort, b, i) = k_float_to_half((float)v); break;
    case CT_K_BFLOAT16: K_AT(k_ushort, b, i) = k_float_to_bfloat16((float)v); break;
    case CT_K_BOOL: K_AT(k_uchar, b, i) = (k_uchar)(v != 0.0); break;
    default: k_store_long(b, i, dt, k_double_to_long(v)); break;
    }
}
#endif

K_FUNC void k_store_acc(K_GLOBAL k_uchar *b, k_long i, int dt, k_acc v) {
#ifdef K_HAS_FP64
    k_store_double(b, i, dt, v);
#else
    k_store_float(b, i, dt, v);
#endif
}

/* Raw element moves (index_select, gather, where): the dtype only matters
 * through its size. */
K_FUNC void k_move(K_GLOBAL k_uchar *dst, k_long di, K_GLOBAL const k_uchar *src, k_long si,
                   int esize) {
    switch (esize) {
    case 1: K_AT(k_uchar, dst, di) = K_AT(const k_uchar, src, si); break;
    case 2: K_AT(k_ushort, dst, di) = K_AT(const k_ushort, src, si); break;
    case 4: K_AT(k_uint, dst, di) = K_AT(const k_uint, src, si); break;
    default: K_AT(k_ulong, dst, di) = K_AT(const k_ulong, src, si); break;
    }
}

K_FUNC int k_dtype_size(int dt) {
    switch (dt) {
    case CT_K_FLOAT64: case CT_K_INT64: return 8;
    case CT_K_FLOAT32: case CT_K_INT32: return 4;
    case CT_K_FLOAT16: case CT_K_BFLOAT16: return 2;
    default: return 1;
    }
}

#endif /* CT_KERNELS_KDEFS_H */

/* ---- NOTE from oclrt to oclk (delete once read) -------------------------------
 * - philox.h now names its types ct_ph_u32/ct_ph_u64 and its functions
 *   CT_PH_FN (k_uint/k_ulong/K_FUNC under kdefs.h); its normal draw no longer
 *   calls log/cos (PoCL's double log/cos differ from glibc's in ~6% of
 *   inputs), so it relies on FP_CONTRACT OFF above: please keep it.
 * - The program is built with -cl-fp32-correctly-rounded-divide-sqrt when
 *   the device supports it (PoCL does), so float32 a / b and sqrt round as
 *   on the CPU there.
 * - My kernels: src/kernels/data.kh (ct_k_copy, ct_k_fill, ct_k_arange_*,
 *   ct_k_random) and matmul_int.kh (ct_k_matmul_int). */
