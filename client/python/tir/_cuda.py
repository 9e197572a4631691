"""The few CUDA driver calls a cubin bundle needs, through ctypes (no CUDA
Python package): load a module in the current context (torch's primary
context of the tensors' device), launch a kernel on a stream with its
parameter struct, encode a TMA tensor map. Errors raise TirError:
CUDA_DRIVER_UNAVAILABLE (no libcuda, or no device) and CUDA_ERROR (a call
failed; the driver's name for the error)."""

import ctypes
import threading

import grpc

from tir.client import TirError

_driver = None
_lock = threading.Lock()

CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8
CU_TENSOR_MAP_DATA_TYPE_FLOAT16 = 6
CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 = 9
CU_TENSOR_MAP_INTERLEAVE_NONE = 0
CU_TENSOR_MAP_SWIZZLE_128B = 3
CU_TENSOR_MAP_L2_PROMOTION_L2_256B = 3
CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE = 0


def tensor_map_encodable(pointer, shape, strides, elem_bytes):
    """The layout rule of a TMA operand (compiler/codegen/HostBuild.h,
    TensorMapEncodable): rank 2, inner stride 1, base and outer stride
    16-byte aligned, outer stride positive and below 2^40 bytes, extents from
    1 to 2^31 - 1. The kernel tests the same and loads without TMA otherwise."""
    if len(shape) != 2 or strides[1] != 1 or pointer % 16:
        return False
    outer = strides[0] * elem_bytes
    if outer <= 0 or outer % 16 or outer >= 1 << 40:
        return False
    return all(1 <= d <= (1 << 31) - 1 for d in shape)


class Driver:
    def __init__(self, lib):
        self._lib = lib
        self._contexts = {}
        self._check(lib.cuInit(0), "cuInit")

    def _name(self, rc):
        s = ctypes.c_char_p()
        if self._lib.cuGetErrorName(rc, ctypes.byref(s)) == 0 and s.value:
            return s.value.decode()
        return "CUDA error %d" % rc

    def _check(self, rc, what):
        if rc != 0:
            raise TirError(grpc.StatusCode.INTERNAL, "CUDA_ERROR", "%s: %s" % (what, self._name(rc)))

    def use_device(self, index):
        """Makes the primary context of device `index` (the one torch's
        runtime uses) current on this thread."""
        ctx = self._contexts.get(index)
        if ctx is None:
            dev = ctypes.c_int()
            self._check(self._lib.cuDeviceGet(ctypes.byref(dev), index), "cuDeviceGet")
            ctx = ctypes.c_void_p()
            self._check(self._lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
            self._contexts[index] = ctx
        self._check(self._lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    def load(self, cubin, entry, dynamic_smem):
        """(module, function) of `entry` in `cubin`, in the current context."""
        module = ctypes.c_void_p()
        image = ctypes.create_string_buffer(bytes(cubin), len(cubin))
        self._check(self._lib.cuModuleLoadData(ctypes.byref(module), image), "cuModuleLoadData")
        fn = ctypes.c_void_p()
        self._check(self._lib.cuModuleGetFunction(ctypes.byref(fn), module, entry.encode()), "cuModuleGetFunction")
        if dynamic_smem > 48 * 1024:
            self._check(self._lib.cuFuncSetAttribute(fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                     int(dynamic_smem)), "cuFuncSetAttribute")
        return (module, fn)

    def launch(self, loaded, grid, block, smem, stream, params):
        """cuLaunchKernel with one by-value struct parameter (`params`)."""
        _, fn = loaded
        buf = ctypes.create_string_buffer(params, max(1, len(params)))
        args = (ctypes.c_void_p * 1)(ctypes.addressof(buf))
        self._check(self._lib.cuLaunchKernel(fn, *[ctypes.c_uint(g) for g in grid], *[ctypes.c_uint(b) for b in block],
                                             ctypes.c_uint(smem), ctypes.c_void_p(stream), args, None),
                    "cuLaunchKernel")

    def tensor_map(self, pointer, shape, strides, elem_bytes, bf16, box):
        """The 128-byte CUtensorMap of a rank-2 tensor (inner dim first, the
        128-byte swizzle, zeros outside), or None when the layout allows none."""
        if not tensor_map_encodable(pointer, shape, strides, elem_bytes):
            return None
        encode = getattr(self._lib, "cuTensorMapEncodeTiled", None)
        if encode is None:
            raise TirError(grpc.StatusCode.FAILED_PRECONDITION, "CUDA_DRIVER_UNAVAILABLE",
                           "the kernel loads by TMA and the driver has no cuTensorMapEncodeTiled (CUDA 12 or newer)")
        out = (ctypes.c_uint8 * 128)()
        dims = (ctypes.c_uint64 * 2)(shape[1], shape[0])
        outer = (ctypes.c_uint64 * 1)(strides[0] * elem_bytes)
        boxes = (ctypes.c_uint32 * 2)(*box[:2])
        elements = (ctypes.c_uint32 * 2)(1, 1)
        self._check(encode(out, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 if bf16 else CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                           ctypes.c_uint(2), ctypes.c_void_p(pointer), dims, outer, boxes, elements,
                           CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                           CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE),
                    "cuTensorMapEncodeTiled")
        return bytes(out)


def driver():
    """The process's driver, loaded once. CUDA_DRIVER_UNAVAILABLE when this
    machine has no libcuda.so.1 or cuInit fails (no device)."""
    global _driver
    with _lock:
        if _driver is None:
            try:
                lib = ctypes.CDLL("libcuda.so.1")
            except OSError as e:
                raise TirError(grpc.StatusCode.FAILED_PRECONDITION, "CUDA_DRIVER_UNAVAILABLE",
                               "a cubin bundle runs on an NVIDIA GPU; this machine has no CUDA driver (%s)" % e)
            try:
                _driver = Driver(lib)
            except TirError as e:
                raise TirError(grpc.StatusCode.FAILED_PRECONDITION, "CUDA_DRIVER_UNAVAILABLE",
                               "the CUDA driver does not start: %s" % e.message)
        return _driver
