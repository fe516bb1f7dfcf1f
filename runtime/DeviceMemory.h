//===- DeviceMemory.h - Buffers that stay on a module's device --*- C++ -*-===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// A GPU module's entries take host memory and copy every argument to the
// device and back at each call; each also has a device twin
// (EntrySpec::deviceSymbol) whose arguments are device memory already. A
// DeviceMemory allocates such buffers and moves data in and out of them,
// so that a caller keeps what does not change between calls (a training
// run's weights and moments) on the device: CUDA device memory through the
// driver for a `cuda` module, host memory for one of the gpu-emulation
// target (its "device" is the CPU). It counts its copies (traffic()), which
// is how the tests check what moves per call.
//
//===----------------------------------------------------------------------===//

#ifndef HKT_RUNTIME_DEVICEMEMORY_H
#define HKT_RUNTIME_DEVICEMEMORY_H

#include "runtime/Manifest.h"
#include "runtime/Status.h"
#include "runtime/Tensor.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace hkt::runtime {

class DeviceMemory;

/// A tensor in device memory; freed with its DeviceMemory's API when it
/// goes. Its DeviceMemory must outlive it.
class DeviceTensor {
public:
  DeviceTensor() = default;
  DeviceTensor(DeviceTensor &&other) noexcept { *this = std::move(other); }
  DeviceTensor &operator=(DeviceTensor &&other) noexcept;
  ~DeviceTensor();

  DType dtype() const { return type; }
  const std::vector<int64_t> &shape() const { return dims; }
  size_t byteSize() const { return bytes; }
  /// The bytes of its buffer (its size when allocated): what a smaller
  /// shape may reuse (DeviceMemory::uploadReshaping).
  size_t capacity() const { return capacityBytes; }
  /// The device address (null for an empty tensor).
  void *data() const { return address; }

private:
  friend class DeviceMemory;
  DeviceMemory *owner = nullptr;
  DType type = DType::F32;
  std::vector<int64_t> dims;
  size_t bytes = 0, capacityBytes = 0;
  void *address = nullptr;
};

/// What crossed between the host and the device.
struct DeviceTraffic {
  int64_t uploads = 0, downloads = 0;
  uint64_t bytesUp = 0, bytesDown = 0;
};

class DeviceMemory {
public:
  /// The memory of a module of `kind`: CUDA device memory (the driver must
  /// open), or host memory (TargetKind::Cpu: an emulated GPU).
  static Expected<std::unique_ptr<DeviceMemory>> create(TargetKind kind);

  /// A zero-filled buffer of `type` and `shape`; fails with the driver's
  /// message (out of memory, ...).
  Expected<DeviceTensor> allocate(DType type,
                                  const std::vector<int64_t> &shape);
  /// A buffer holding `host`'s contents.
  Expected<DeviceTensor> upload(const Tensor &host);
  /// Copies `host` into `device` (same dtype and shape) / back.
  Status upload(DeviceTensor &device, const Tensor &host);
  Status download(Tensor &host, const DeviceTensor &device);
  /// Copies `host` into `device`'s buffer, which takes `host`'s shape: an
  /// argument whose dynamic size changes from call to call (a batch as
  /// wide as its longest example) moves only its bytes and keeps its
  /// buffer. Fails if the dtype differs or the bytes exceed the buffer's
  /// capacity.
  Status uploadReshaping(DeviceTensor &device, const Tensor &host);

  const DeviceTraffic &traffic() const { return counts; }
  /// Buffers allocated and not yet freed.
  int64_t liveBuffers() const { return live; }
  bool isCuda() const { return cuda; }

private:
  explicit DeviceMemory(bool cuda) : cuda(cuda) {}
  friend class DeviceTensor;
  void release(void *address);
  Status sameLayout(const DeviceTensor &device, const Tensor &host,
                    const char *what) const;
  /// One counted copy, host to device (`up`) or back.
  Status copy(void *dst, const void *src, size_t bytes, bool up);

  bool cuda;
  DeviceTraffic counts;
  int64_t live = 0;
};

} // namespace hkt::runtime

#endif // HKT_RUNTIME_DEVICEMEMORY_H
