#!/usr/bin/python3
"""gen_print_fixtures.py — writes tests/fixtures/print_cases.h, PyTorch's repr
of a set of tensors that tests/test_print.c rebuilds in C and prints with
ct_snprint, comparing the text exactly.

Every tensor is built the same way on both sides: float64 values (an explicit
list, or (a + b*i + q*i*i) / c for element i, exact in IEEE double on both
sides), reshaped, converted to the case's dtype, then optionally viewed
(transpose, narrow, slice, expand, select, permute). The header stores the
recipe and the expected text, so the C test needs no Python.

Run with Debian's PyTorch:   /usr/bin/python3 tools/gen_print_fixtures.py
(writes the header next to the tests; pass another path as argv[1]).
"""
import math
import os
import sys

import torch

F32, F64, F16, BF16 = torch.float32, torch.float64, torch.float16, torch.bfloat16
I32, I64, U8, BOOL = torch.int32, torch.int64, torch.uint8, torch.bool

C_DTYPES = {F32: "CT_FLOAT32", F64: "CT_FLOAT64", F16: "CT_FLOAT16", BF16: "CT_BFLOAT16",
            I32: "CT_INT32", I64: "CT_INT64", U8: "CT_UINT8", BOOL: "CT_BOOL"}

NAN, INF = float("nan"), float("inf")


def case(name, dtype, shape, values=None, formula=(0, 1, 0, 1), view=None,
         default_f64=False, requires_grad=False):
    return dict(name=name, dtype=dtype, shape=tuple(shape), values=values, formula=formula,
                view=view, default_f64=default_f64, requires_grad=requires_grad)


def arange(name, dtype, shape, a=0, b=1, c=1, q=0, **kw):
    """Element i is (a + b*i + q*i*i) / c."""
    return case(name, dtype, shape, formula=(a, b, q, c), **kw)


CASES = [
    # kinds, dtypes and their suffixes
    case("float_int_mode", F32, [3], [1, 2, 3]),
    case("float_fixed", F32, [3], [0.12345, 1.0, -2.5]),
    case("float_2d", F32, [2, 2], [0.12345, 1.0, 2.5, -3.75]),
    arange("int64_vec", I64, [5]),
    case("int32_vec", I32, [3], [-100, 5, 20]),
    case("float64_vec", F64, [2], [0.5, 1.25]),
    case("bool_vec", BOOL, [3], [1, 0, 1]),
    case("bool_2d", BOOL, [2, 3], [1, 0, 1, 0, 0, 1]),
    case("uint8_vec", U8, [3], [0, 255, 7]),
    case("float16_vec", F16, [3], [0.1, 1.5, -2]),
    case("bfloat16_vec", BF16, [3], [0.1, 1.5, -2]),
    case("int64_large", I64, [2], [2.0 ** 62, -(2.0 ** 62)]),
    case("int_mode_wide", F32, [2], [100000, -3]),
    # 0-dim tensors
    case("scalar_float", F32, [], [3.5]),
    case("scalar_int", I64, [], [7]),
    case("scalar_bool", BOOL, [], [1]),
    case("scalar_nan", F32, [], [NAN]),
    case("scalar_float64_whole", F64, [], [2]),
    case("scalar_int32_negative", I32, [], [-42]),
    # empty tensors
    case("empty_1d", F32, [0], []),
    case("empty_2d", F32, [0, 3], []),
    case("empty_int64", I64, [0], []),
    case("empty_3d_int32", I32, [2, 0, 4], []),
    case("empty_bool_2d", BOOL, [3, 0], []),
    # notation choice: scientific, int mode, non-finite values
    case("sci_ratio", F32, [2], [1e-5, 1e3]),
    case("sci_int_mode", F32, [3], [1e9, 1, 5]),
    case("sci_min_small", F32, [2], [1e-5, 0.5]),
    case("sci_float64", F64, [3], [1.5e-7, 2.25, -3e10]),
    case("nonfinite", F32, [4], [NAN, INF, -INF, 1.5]),
    case("nonfinite_int_mode", F32, [4], [NAN, 1, -INF, 20]),
    case("nonfinite_only", F32, [2], [NAN, INF]),
    case("nonfinite_sci", F32, [3], [NAN, 1e-6, 1.0]),
    case("zeros", F32, [3], [0, 0, 0]),
    case("negative_zero_only", F32, [1], [-0.0]),
    case("rounding_edges", F64, [3], [0.12345, 0.99995, 2.00005]),
    case("fixed_wide", F32, [2], [12345.678, 99.5]),
    arange("float16_summarised", F16, [1500], c=8),
    arange("bfloat16_sci", BF16, [4], a=1, q=1000, c=1),
    case("negative_zero", F32, [2], [-0.0, 1.0]),
    # line wrapping and nesting
    arange("wrap_float", F32, [30], a=-15, c=7),
    arange("wrap_int", I64, [100]),
    arange("wrap_2d", F32, [3, 20], c=3),
    arange("nested_3d", F32, [2, 3, 4]),
    arange("nested_4d", I64, [2, 2, 2, 3]),
    arange("nested_8d", F32, [2, 2, 2, 2, 2, 2, 2, 2], c=2),
    # summarisation past 1000 elements
    arange("summarise_1d_int", I64, [1001]),
    arange("summarise_1d_float", F32, [2000], c=1999),
    arange("summarise_2d", F32, [40, 40], a=-800, c=3),
    arange("summarise_3d", I32, [12, 10, 10]),
    arange("summarise_middle_dim", F32, [2, 1000, 2], c=4),
    arange("summarise_edges_decide", F32, [10000], a=-5000),
    arange("summarise_8d", I64, [7, 1, 7, 1, 7, 1, 7, 1]),
    arange("summarise_sci", F64, [1200], a=1, q=1, c=8),
    # non-contiguous views
    arange("view_transpose", F32, [3, 4], c=2, view=("t",)),
    arange("view_narrow", I64, [4, 5], view=("narrow", 1, 1, 3)),
    arange("view_slice_step", F32, [10], view=("slice", 0, 1, 9, 3)),
    case("view_expand", F32, [3], [1, 2, 3], view=("expand", [2, 3])),
    arange("view_select", F64, [3, 4], c=4, view=("select", 0, 1)),
    arange("view_permute", I32, [2, 3, 4], view=("permute", [2, 0, 1])),
    case("view_expand_huge", F32, [1, 1], [2.5], view=("expand", [100000, 100000])),
    arange("view_transpose_summarised", F32, [50, 30], c=10, view=("t",)),
    # default dtype float64
    case("default_f64_float32", F32, [2], [1.5, 2], default_f64=True),
    case("default_f64_float64", F64, [2], [1.5, 2], default_f64=True),
    case("default_f64_empty_float32", F32, [0], [], default_f64=True),
    # suffixes that wrap past 80 columns
    arange("suffix_wrap", F64, [9], c=3),
    arange("suffix_wrap_2d", F64, [2, 9], c=3),
    arange("suffix_fits", F64, [6], c=3),
    arange("suffix_wraps_first", F64, [7], c=3),
    arange("suffix_after_newline", F64, [2, 2], c=3),
    # autograd flag
    case("requires_grad", F32, [2], [1, 2], requires_grad=True),
    case("requires_grad_float64", F64, [3], [0.5, 1, 2], requires_grad=True),
]


def values_of(c):
    n = math.prod(c["shape"])
    if c["values"] is not None:
        assert len(c["values"]) == n, c["name"]
        return [float(v) for v in c["values"]]
    a, b, q, d = c["formula"]
    return [(a + b * i + q * i * i) / d for i in range(n)]


def build(c):
    base = torch.tensor(values_of(c), dtype=torch.float64).reshape(c["shape"]).to(c["dtype"])
    if c["requires_grad"]:
        base.requires_grad_()
    v = c["view"]
    if v is None:
        return base
    kind = v[0]
    if kind == "t":
        return base.t()
    if kind == "narrow":
        return base.narrow(v[1], v[2], v[3])
    if kind == "slice":
        idx = [slice(None)] * base.dim()
        idx[v[1]] = slice(v[2], v[3], v[4])
        return base[tuple(idx)]
    if kind == "expand":
        return base.expand(*v[1])
    if kind == "select":
        return base.select(v[1], v[2])
    if kind == "permute":
        return base.permute(*v[1])
    raise ValueError(kind)


def c_double(x):
    if math.isnan(x):
        return "NAN"
    if math.isinf(x):
        return "INFINITY" if x > 0 else "-INFINITY"
    return repr(float(x))


def c_string(s):
    out = s.replace("\\", "\\\\").replace('"', '\\"').split("\n")
    return "\n        ".join('"' + line + ('\\n"' if k < len(out) - 1 else '"')
                             for k, line in enumerate(out))


def c_int_list(xs):
    return "{" + ", ".join(str(int(x)) for x in xs) + "}" if xs else "{0}"


VIEW_KINDS = {None: "CT_PV_NONE", "t": "CT_PV_T", "narrow": "CT_PV_NARROW",
              "slice": "CT_PV_SLICE", "expand": "CT_PV_EXPAND", "select": "CT_PV_SELECT",
              "permute": "CT_PV_PERMUTE"}


def view_params(v):
    if v is None or v[0] == "t":
        return []
    if v[0] in ("expand", "permute"):
        return list(v[1])
    return list(v[1:])


HEADER = """\
/*
 * print_cases.h — PyTorch's repr of the tensors that tests/test_print.c
 * rebuilds; GENERATED by tools/gen_print_fixtures.py with PyTorch {version}.
 * Do not edit: change the generator and run it again.
 *
 * Element i of a case's base tensor is values[i] when values is not NULL,
 * else (a + b*i + q*i*i) / c in double; the base is made as float64 of
 * `shape`, converted to `dtype`, then viewed as `view` says.
 */
#ifndef CT_TEST_PRINT_CASES_H
#define CT_TEST_PRINT_CASES_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "ctorch/ctorch.h"

typedef enum ct_print_view {{
    CT_PV_NONE,
    CT_PV_T,       /* t() */
    CT_PV_NARROW,  /* narrow(p[0], p[1], p[2]) */
    CT_PV_SLICE,   /* slice(dim p[0], start p[1], end p[2], step p[3]) */
    CT_PV_EXPAND,  /* expand(p[0 .. np-1]) */
    CT_PV_SELECT,  /* select(p[0], p[1]) */
    CT_PV_PERMUTE  /* permute(p[0 .. np-1]) */
}} ct_print_view;

typedef struct ct_print_case {{
    const char *name;
    ct_dtype dtype;
    int ndim;
    int64_t shape[CT_MAX_DIMS];
    const double *values;
    double a, b, q, c;
    ct_print_view view;
    int np;
    int64_t p[CT_MAX_DIMS];
    bool default_f64;
    bool requires_grad;
    const char *expected;
}} ct_print_case;
"""


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "..", "tests", "fixtures", "print_cases.h")
    torch.set_printoptions(profile="default")
    lines = [HEADER.format(version=torch.__version__)]
    entries = []
    seen = set()
    for c in CASES:
        assert c["name"] not in seen, c["name"]
        seen.add(c["name"])
        if c["default_f64"]:
            torch.set_default_dtype(torch.float64)
        try:
            text = repr(build(c))
        finally:
            torch.set_default_dtype(torch.float32)
        values = "NULL"
        if c["values"] is not None and c["values"]:
            arr = "ct_pc_values_" + c["name"]
            lines.append("static const double %s[] = {%s};" % (
                arr, ", ".join(c_double(v) for v in values_of(c))))
            values = arr
        a, b, q, d = c["formula"]
        params = view_params(c["view"])
        entries.append(
            "    {\"%s\", %s, %d, %s, %s, %r, %r, %r, %r, %s, %d, %s, %s, %s,\n        %s}" % (
                c["name"], C_DTYPES[c["dtype"]], len(c["shape"]), c_int_list(c["shape"]),
                values, float(a), float(b), float(q), float(d),
                VIEW_KINDS[c["view"][0] if c["view"] else None], len(params),
                c_int_list(params), "true" if c["default_f64"] else "false",
                "true" if c["requires_grad"] else "false", c_string(text)))
    lines.append("")
    lines.append("static const ct_print_case ct_print_cases[] = {")
    lines.append(",\n".join(entries))
    lines.append("};")
    lines.append("")
    lines.append("#endif /* CT_TEST_PRINT_CASES_H */")
    os.makedirs(os.path.dirname(out_path), exist_ok=True)
    with open(out_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %d cases to %s" % (len(CASES), out_path))


if __name__ == "__main__":
    main()
