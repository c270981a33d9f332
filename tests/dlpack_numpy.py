"""dlpack_numpy.py — ctorch's DLPack C API against NumPy (and PyTorch when it
is installed), through ctypes and the Python DLPack protocol.

ctorch has no Python binding, so this plays one: a tensor made through the C
API is handed to numpy.from_dlpack by an object with __dlpack__ and
__dlpack_device__ that wraps ct_to_dlpack's managed tensor in a PyCapsule
("dltensor_versioned", or "dltensor" for the legacy form) whose destructor
calls the deleter unless a consumer took it. The other way, a NumPy array's
__dlpack__ capsule goes into ct_from_dlpack, and the capsule is renamed
"used_..." as the protocol asks of a consumer. Values, shared memory and
that every deleter runs once are checked.

Usage: python3 dlpack_numpy.py path/to/libctorch.so
Exit 77 (skipped) when NumPy is missing.
"""
import ctypes
import gc
import sys

try:
    import numpy as np
except ImportError:
    print("skip: NumPy is not installed")
    sys.exit(77)

c_void_p, c_int64, c_int = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
kDLCPU, kDLFloat = 1, 2
CT_FLOAT32, CT_FLOAT64, CT_INT64 = 1, 2, 6
MAX_DIMS = 8


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", c_int), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(c_int64)),
                ("strides", ctypes.POINTER(c_int64)), ("byte_offset", ctypes.c_uint64)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", c_void_p), ("deleter", c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", c_void_p)]


class CtDevice(ctypes.Structure):
    _fields_ = [("type", c_int), ("index", c_int)]


class CtShape(ctypes.Structure):
    _fields_ = [("ndim", c_int), ("dims", c_int64 * MAX_DIMS)]


class CtOpts(ctypes.Structure):
    _fields_ = [("reserved_", c_int), ("dtype", c_int), ("device", CtDevice),
                ("requires_grad", ctypes.c_bool)]


lib = ctypes.CDLL(sys.argv[1])
lib.ct_from_data.restype = c_void_p
lib.ct_from_data.argtypes = [c_void_p, c_int, CtShape, CtOpts]
for name in ("ct_to_dlpack", "ct_to_dlpack_unversioned", "ct_from_dlpack", "ct_from_dlpack_unversioned",
             "ct_data_ptr"):
    getattr(lib, name).restype = c_void_p
    getattr(lib, name).argtypes = [c_void_p]
lib.ct_release.argtypes = [c_void_p]
lib.ct_get.restype = ctypes.c_double
lib.ct_get.argtypes = [c_void_p, ctypes.POINTER(c_int64)]
lib.ct_fill_.argtypes = [c_void_p, ctypes.c_double]
lib.ct_stride.restype = c_int64
lib.ct_stride.argtypes = [c_void_p, c_int]
lib.ct_last_error.restype = ctypes.c_char_p
lib.ct_live_storages.restype = c_int64
lib.ct_device_count.restype = c_int
lib.ct_device_count.argtypes = [c_int]
lib.ct_device_synchronize.argtypes = [CtDevice]
CT_DEVICE_CUDA, kDLCUDA = 1, 2

api = ctypes.pythonapi
DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p)
api.PyCapsule_New.restype = ctypes.py_object
api.PyCapsule_New.argtypes = [c_void_p, ctypes.c_char_p, DESTRUCTOR]
api.PyCapsule_GetPointer.restype = c_void_p
api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
api.PyCapsule_SetName.restype = c_int
api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]
# the destructor gets a borrowed PyObject *, so these take plain pointers
capsule_is_valid = ctypes.PYFUNCTYPE(c_int, c_void_p, ctypes.c_char_p)(("PyCapsule_IsValid", api))
capsule_pointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, ctypes.c_char_p)(("PyCapsule_GetPointer", api))

failures = 0


def unraisable(u):  # an error in a capsule destructor is a failure too
    global failures
    failures += 1
    print("FAIL: in a destructor:", u.exc_value)


sys.unraisablehook = unraisable


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what)


def must(ptr, what):
    if not ptr:
        raise RuntimeError(f"{what}: {lib.ct_last_error().decode()}")
    return ptr


def ct_tensor(values, dtype, device=CtDevice(0, 0)):
    arr = np.ascontiguousarray(values, dtype=np.float64)
    shape = CtShape(arr.ndim, (c_int64 * MAX_DIMS)(*arr.shape))
    opts = CtOpts(0, dtype, device, False)
    return must(lib.ct_from_data(arr.ctypes.data, CT_FLOAT64, shape, opts), "ct_from_data")


def ct_get(t, *index):
    return lib.ct_get(t, (c_int64 * max(len(index), 1))(*index))


def _deleter_call(ptr, struct):
    m = ctypes.cast(ptr, ctypes.POINTER(struct)).contents
    if m.deleter:
        ctypes.CFUNCTYPE(None, c_void_p)(m.deleter)(ptr)


@DESTRUCTOR
def destroy_versioned(capsule):
    # a consumer that took the tensor renamed the capsule; otherwise it is ours to free
    if capsule_is_valid(capsule, b"dltensor_versioned"):
        _deleter_call(capsule_pointer(capsule, b"dltensor_versioned"), DLManagedTensorVersioned)


@DESTRUCTOR
def destroy_legacy(capsule):
    if capsule_is_valid(capsule, b"dltensor"):
        _deleter_call(capsule_pointer(capsule, b"dltensor"), DLManagedTensor)


class CtExport:
    """What a ctorch Python binding's tensor would do for the protocol."""

    def __init__(self, t, legacy_only=False, device=(kDLCPU, 0)):
        self.t, self.legacy_only, self.device = t, legacy_only, device

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if copy:
            raise BufferError("ctorch exports share memory; copy=True is not supported")
        if max_version is not None and max_version[0] >= 1 and not self.legacy_only:
            m = must(lib.ct_to_dlpack(self.t), "ct_to_dlpack")
            return api.PyCapsule_New(m, b"dltensor_versioned", destroy_versioned)
        m = must(lib.ct_to_dlpack_unversioned(self.t), "ct_to_dlpack_unversioned")
        return api.PyCapsule_New(m, b"dltensor", destroy_legacy)


class LegacyOnly(CtExport):
    """A producer that predates DLPack 1.0: it knows no max_version."""

    def __dlpack__(self, stream=None):
        return super().__dlpack__(stream=stream)


# PyCapsule_SetName keeps the pointer it is given, not a copy: these names
# must outlive every capsule renamed with them
USED_NAMES = {True: b"used_dltensor_versioned", False: b"used_dltensor"}


def import_capsule(capsule, versioned):
    """ct_from_dlpack on a producer's capsule, renaming it as a consumer must."""
    name = b"dltensor_versioned" if versioned else b"dltensor"
    ptr = api.PyCapsule_GetPointer(capsule, name)
    fn = lib.ct_from_dlpack if versioned else lib.ct_from_dlpack_unversioned
    t = must(fn(ptr), "ct_from_dlpack")
    api.PyCapsule_SetName(capsule, USED_NAMES[versioned])
    return t, ptr


def test_export_to_numpy(producer, what):
    storages = lib.ct_live_storages()
    ref = np.arange(6, dtype=np.float32).reshape(2, 3) * 1.5
    t = ct_tensor(ref, CT_FLOAT32)
    arr = np.from_dlpack(producer(t))
    check(arr.dtype == np.float32 and arr.shape == (2, 3), f"{what}: {arr.dtype} {arr.shape}")
    check(np.array_equal(arr, ref), f"{what}: values {arr} != {ref}")
    check(arr.ctypes.data == lib.ct_data_ptr(t), f"{what}: NumPy's array does not share ctorch's memory")
    if arr.flags.writeable:  # NumPy makes legacy (unversioned) imports read-only
        arr[1, 2] = 42.0  # NumPy writes, ctorch reads
        check(ct_get(t, 1, 2) == 42.0, f"{what}: ctorch reads {ct_get(t, 1, 2)} after NumPy wrote 42")
    else:
        # NumPy before 2.1 asks for legacy capsules only, and makes those read-only
        check(what == "legacy" or not NUMPY_VERSIONED,
              f"{what}: NumPy made the import read-only, but ctorch sets no read-only flag")
    lib.ct_fill_(t, 7.0)
    check(np.all(arr == 7.0), f"{what}: NumPy reads {arr} after ctorch filled 7")
    lib.ct_release(t)  # NumPy keeps the memory alive
    check(np.all(arr == 7.0), f"{what}: values lost after ct_release")
    check(lib.ct_live_storages() == storages + 1, f"{what}: the storage should live while NumPy holds it")
    del arr
    gc.collect()
    check(lib.ct_live_storages() == storages, f"{what}: the deleter did not run after NumPy let go")


def test_unconsumed_capsule():
    storages = lib.ct_live_storages()
    t = ct_tensor([1.0, 2.0], CT_FLOAT32)
    cap = CtExport(t).__dlpack__(max_version=(1, 0))
    lib.ct_release(t)
    del cap
    gc.collect()
    check(lib.ct_live_storages() == storages, "an unconsumed capsule's destructor must call the deleter")


def test_import_from_numpy(versioned):
    what = "versioned" if versioned else "legacy"
    base = np.arange(12, dtype=np.float64).reshape(3, 4)
    view = base[:, 1:3]  # offset 1, strides (4, 1) in elements
    refs = sys.getrefcount(base)
    capsule = view.__dlpack__(max_version=(1, 0)) if versioned else view.__dlpack__()
    t, ptr = import_capsule(capsule, versioned)
    del capsule
    if versioned:
        m = ctypes.cast(ptr, ctypes.POINTER(DLManagedTensorVersioned)).contents
        check(m.version.major == 1, f"{what}: NumPy's managed tensor has version {m.version.major}")
    check(lib.ct_stride(t, 0) == 4 and lib.ct_stride(t, 1) == 1,
          f"{what}: strides ({lib.ct_stride(t, 0)}, {lib.ct_stride(t, 1)}), expected (4, 1)")
    check(lib.ct_data_ptr(t) == view.ctypes.data, f"{what}: ctorch does not share NumPy's memory")
    for i in range(3):
        for j in range(2):
            check(ct_get(t, i, j) == view[i, j], f"{what}: [{i}, {j}] is {ct_get(t, i, j)}, expected {view[i, j]}")
    base[2, 2] = -5.0
    check(ct_get(t, 2, 1) == -5.0, f"{what}: ctorch reads {ct_get(t, 2, 1)} after NumPy wrote -5")
    lib.ct_fill_(t, 9.0)
    check(np.all(base[:, 1:3] == 9.0) and np.all(base[:, 0] == [0, 4, 8]) and np.all(base[:, 3] == [3, 7, 11]),
          f"{what}: NumPy sees {base} after ctorch filled its view with 9")
    del view
    lib.ct_release(t)  # the last ctorch user: NumPy's deleter runs and drops its reference
    gc.collect()
    check(sys.getrefcount(base) <= refs, f"{what}: NumPy's deleter did not run (refcount {sys.getrefcount(base)})")


def numpy_has_versioned():
    """NumPy 2.1 and later make versioned capsules (__dlpack__(max_version=...));
    Debian 12's NumPy 1.24 only legacy ones."""
    try:
        np.arange(1).__dlpack__(max_version=(1, 0))
        return True
    except TypeError:
        return False


def test_import_read_only():
    if not NUMPY_VERSIONED:
        print(f"skip: read-only flag (NumPy {np.__version__} makes no versioned capsules)")
        return
    arr = np.arange(4, dtype=np.int64)
    arr.flags.writeable = False
    capsule = arr.__dlpack__(max_version=(1, 0))
    t, ptr = import_capsule(capsule, True)
    m = ctypes.cast(ptr, ctypes.POINTER(DLManagedTensorVersioned)).contents
    check(m.flags & 1, "NumPy marks a read-only array DLPACK_FLAG_BITMASK_READ_ONLY")
    check(ct_get(t, 3) == 3.0, "a read-only array is imported (documented)")
    lib.ct_release(t)


def test_import_refused():
    arr = np.zeros(3, dtype=np.complex64)
    if NUMPY_VERSIONED:
        capsule = arr.__dlpack__(max_version=(1, 0))
        ptr = api.PyCapsule_GetPointer(capsule, b"dltensor_versioned")
        check(not lib.ct_from_dlpack(ptr), "complex64 must be refused")
    else:
        capsule = arr.__dlpack__()
        ptr = api.PyCapsule_GetPointer(capsule, b"dltensor")
        check(not lib.ct_from_dlpack_unversioned(ptr), "complex64 must be refused")
    msg = lib.ct_last_error().decode()
    check("unsupported DLPack dtype (code 5 (kDLComplex), bits 64, lanes 1)" in msg, f"message: {msg}")
    del capsule  # not renamed: NumPy's destructor frees it
    gc.collect()


def test_torch():
    try:
        import torch
    except ImportError:
        print("skip: PyTorch is not installed")
        return
    t = ct_tensor([[1, 2], [3, 4]], CT_INT64)
    x = torch.from_dlpack(CtExport(t))
    check(x.dtype == torch.int64 and x.tolist() == [[1, 2], [3, 4]], f"torch.from_dlpack: {x}")
    x.add_(10)
    check(ct_get(t, 1, 0) == 13.0, "ctorch reads PyTorch's in-place add")
    lib.ct_release(t)
    del x
    y = torch.arange(6, dtype=torch.float32).reshape(2, 3).t()
    u, _ = import_capsule(y.__dlpack__(max_version=(1, 0)), True)
    check(lib.ct_stride(u, 0) == 1 and lib.ct_stride(u, 1) == 3, "PyTorch's transposed strides")
    y[2, 1] = 99.0
    check(ct_get(u, 2, 1) == 99.0, "ctorch reads PyTorch's write")
    lib.ct_release(u)
    if torch.cuda.is_available() and lib.ct_device_count(CT_DEVICE_CUDA) > 0:
        test_torch_cuda(torch)
    else:
        print("skip: PyTorch/ctorch CUDA round trip (no CUDA device for both)")


def test_torch_cuda(torch):
    cuda0 = CtDevice(CT_DEVICE_CUDA, 0)
    t = ct_tensor([[1, 2, 3], [4, 5, 6]], CT_FLOAT32, cuda0)
    x = torch.from_dlpack(CtExport(t, device=(kDLCUDA, 0)))  # ct_to_dlpack synchronised ctorch's stream
    check(x.device.type == "cuda" and x.tolist() == [[1, 2, 3], [4, 5, 6]], f"CUDA torch.from_dlpack: {x}")
    x.mul_(2)
    torch.cuda.synchronize()  # PyTorch's work is on PyTorch's stream
    check(ct_get(t, 1, 2) == 12.0, f"ctorch reads {ct_get(t, 1, 2)} after PyTorch's CUDA mul_")
    lib.ct_release(t)
    del x
    y = torch.arange(12, dtype=torch.float64, device="cuda").reshape(3, 4)[:, 1:3]
    torch.cuda.synchronize()
    u, _ = import_capsule(y.__dlpack__(max_version=(1, 0)), True)
    check(lib.ct_stride(u, 0) == 4 and ct_get(u, 2, 1) == 10.0, "ctorch reads PyTorch's CUDA view")
    lib.ct_fill_(u, -1.0)
    lib.ct_device_synchronize(cuda0)
    check(y.sum().item() == -6.0, f"PyTorch sees ctorch's CUDA fill: {y}")
    lib.ct_release(u)


NUMPY_VERSIONED = numpy_has_versioned()
test_export_to_numpy(CtExport, "versioned")
test_export_to_numpy(LegacyOnly, "legacy")
test_unconsumed_capsule()
if NUMPY_VERSIONED:
    test_import_from_numpy(True)
else:
    print(f"skip: versioned import from NumPy (NumPy {np.__version__} makes only legacy capsules)")
test_import_from_numpy(False)
test_import_read_only()
test_import_refused()
test_torch()
gc.collect()
print(f"numpy {np.__version__}: {'FAILED ' + str(failures) if failures else 'all passed'}")
sys.exit(1 if failures else 0)
