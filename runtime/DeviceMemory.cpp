//===- DeviceMemory.cpp - Buffers that stay on a module's device ----------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "runtime/DeviceMemory.h"

#include "runtime/CudaDriver.h"
#include "runtime/Internal.h"

#include <cstdlib>
#include <cstring>

using namespace hkt::runtime;
using hkt::runtime::detail::concat;

namespace {
/// The driver; DeviceMemory::create made sure it opened.
const CudaDriverApi &driver() { return **cudaDriver(); }

/// A copy on the default stream, waited for: the buffers a call reads are
/// in place before it starts, the results it wrote are there after.
Status cudaCopy(void *dst, const void *src, size_t bytes, const char *what) {
  const CudaDriverApi &a = driver();
  CUresult r =
      a.cuMemcpyAsync(reinterpret_cast<CUdeviceptr>(dst),
                      reinterpret_cast<CUdeviceptr>(src), bytes, nullptr);
  if (r == 0)
    r = a.cuStreamSynchronize(nullptr);
  if (r != 0)
    return Status::error(concat(
        what, " (", bytes, " bytes): ", cudaErrorText(a, r, "cuMemcpyAsync")));
  return Status::success();
}
} // namespace

DeviceTensor &DeviceTensor::operator=(DeviceTensor &&other) noexcept {
  if (this != &other) {
    if (owner)
      owner->release(address);
    owner = other.owner;
    type = other.type;
    dims = std::move(other.dims);
    bytes = other.bytes;
    capacityBytes = other.capacityBytes;
    address = other.address;
    other.owner = nullptr;
    other.address = nullptr;
    other.bytes = other.capacityBytes = 0;
  }
  return *this;
}

DeviceTensor::~DeviceTensor() {
  if (owner)
    owner->release(address);
}

Expected<std::unique_ptr<DeviceMemory>> DeviceMemory::create(TargetKind kind) {
  if (kind == TargetKind::Cuda) {
    Expected<const CudaDriverApi *> d = cudaDriver();
    if (!d)
      return d.status();
  }
  return std::unique_ptr<DeviceMemory>(
      new DeviceMemory(kind == TargetKind::Cuda));
}

Expected<DeviceTensor>
DeviceMemory::allocate(DType type, const std::vector<int64_t> &shape) {
  std::optional<int64_t> n = checkedNumElements(shape, dtypeSize(type));
  if (!n)
    return Status::error(concat("cannot allocate a device tensor of shape ",
                                formatShape(shape)));
  DeviceTensor t;
  t.type = type;
  t.dims = shape;
  t.bytes = t.capacityBytes = static_cast<size_t>(*n) * dtypeSize(type);
  size_t bytes = t.bytes ? t.bytes : 1; // a distinct address for each
  if (cuda) {
    const CudaDriverApi &a = driver();
    CUdeviceptr p = 0;
    if (CUresult r = a.cuMemAlloc(&p, bytes))
      return Status::error(concat(
          "allocating ", bytes,
          " bytes of device memory: ", cudaErrorText(a, r, "cuMemAlloc")));
    t.address = reinterpret_cast<void *>(p);
    // Waited for: the module's kernels run on their own non-blocking
    // stream, which does not wait for the default one.
    CUresult r = a.cuMemsetD32Async(p, 0, bytes / 4, nullptr);
    if (r == 0)
      r = a.cuStreamSynchronize(nullptr);
    if (r != 0) {
      a.cuMemFree(p);
      return Status::error(concat("clearing device memory: ",
                                  cudaErrorText(a, r, "cuMemsetD32Async")));
    }
  } else {
    size_t rounded =
        (bytes + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
    t.address = std::aligned_alloc(kTensorAlignment, rounded);
    if (!t.address)
      return Status::error(concat("out of memory allocating ", bytes,
                                  " bytes for a device tensor"));
    std::memset(t.address, 0, rounded);
  }
  t.owner = this;
  ++live;
  return t;
}

void DeviceMemory::release(void *address) {
  if (!address)
    return;
  --live;
  if (cuda)
    driver().cuMemFree(reinterpret_cast<CUdeviceptr>(address));
  else
    std::free(address);
}

Status DeviceMemory::sameLayout(const DeviceTensor &device, const Tensor &host,
                                const char *what) const {
  if (device.dtype() != host.dtype() || device.shape() != host.shape())
    return Status::error(
        concat("cannot ", what, " ", host.describe(), ": the device tensor is ",
               dtypeName(device.dtype()), " ", formatShape(device.shape())));
  return Status::success();
}

Expected<DeviceTensor> DeviceMemory::upload(const Tensor &host) {
  Expected<DeviceTensor> t = allocate(host.dtype(), host.shape());
  if (!t)
    return t;
  if (Status s = upload(*t, host); !s.ok())
    return s;
  return t;
}

Status DeviceMemory::upload(DeviceTensor &device, const Tensor &host) {
  if (Status s = sameLayout(device, host, "upload"); !s.ok())
    return s;
  return copy(device.data(), host.data(), host.byteSize(), /*up=*/true);
}

Status DeviceMemory::uploadReshaping(DeviceTensor &device, const Tensor &host) {
  if (device.dtype() != host.dtype() || host.byteSize() > device.capacity())
    return Status::error(concat(
        "cannot upload ", host.describe(), " into a device buffer of ",
        dtypeName(device.dtype()), " and ", device.capacity(), " bytes"));
  device.dims = host.shape();
  device.bytes = host.byteSize();
  return copy(device.data(), host.data(), host.byteSize(), /*up=*/true);
}

Status DeviceMemory::download(Tensor &host, const DeviceTensor &device) {
  if (Status s = sameLayout(device, host, "download into"); !s.ok())
    return s;
  return copy(host.data(), device.data(), host.byteSize(), /*up=*/false);
}

Status DeviceMemory::copy(void *dst, const void *src, size_t bytes, bool up) {
  if (bytes == 0)
    return Status::success();
  if (!cuda)
    std::memcpy(dst, src, bytes);
  else if (Status s = cudaCopy(dst, src, bytes,
                               up ? "copying to the device"
                                  : "copying from the device");
           !s.ok())
    return s;
  ++(up ? counts.uploads : counts.downloads);
  (up ? counts.bytesUp : counts.bytesDown) += bytes;
  return Status::success();
}
