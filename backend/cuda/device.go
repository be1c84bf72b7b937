//go:build cuda

package cuda

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sync"
	"unsafe"

	"gorgonia.org/cu"

	"statesim/kernels"
)

// Device is a CUDA context with statesim's kernels loaded.
type Device struct {
	Name string
	Mem  int64 // total device memory, bytes
	SMs  int   // multiprocessors
	// Driver is the CUDA driver API version (13000 = 13.0).
	Driver int
	ctx    cu.CUContext
	fn     map[string]cu.Function
	alloc  []cu.DevicePtr
	// caches is the backend whose caches the device holds: one run's at a
	// time, as runs in a process are sequential and a pool sized from
	// gpu_memory_utilization takes most of the device.
	caches interface{ Close() }
}

// The process's device. A CUDA context is a process resource (cuInit is
// process-wide; gorgonia.org/cu calls it at start-up) made current on one
// OS thread, so statesim opens GPU 0 once, on first use, and keeps it to
// exit: every run and experiment in the process shares one context, one
// set of loaded modules and one owner of the memory. The registry's
// factory has no caller to receive a device from, which is why this one
// value lives here and not in cmd/statesim.
var processDevice struct {
	once sync.Once
	dev  *Device
	err  error
}

// Shared opens the process's device on first use (Open) and returns it
// afterwards. The first caller's goroutine is the one that must use it.
func Shared() (*Device, error) {
	processDevice.once.Do(func() { processDevice.dev, processDevice.err = Open() })
	return processDevice.dev, processDevice.err
}

// Open makes a context on GPU 0 current on the calling OS thread and loads
// every kernel module. The caller must stay on this goroutine.
func Open() (*Device, error) {
	d, err := cu.GetDevice(0)
	if err != nil {
		return nil, fmt.Errorf("cuda: no device: %w", err)
	}
	name, _ := d.Name()
	mem, _ := d.TotalMem()
	ctx, err := d.MakeContext(cu.SchedAuto)
	if err != nil {
		return nil, fmt.Errorf("cuda: context: %w", err)
	}
	if err := ctx.Lock(); err != nil {
		return nil, fmt.Errorf("cuda: context: %w", err)
	}
	sms, err := d.Attribute(cu.MultiprocessorCount)
	if err != nil {
		return nil, fmt.Errorf("cuda: multiprocessor count: %w", err)
	}
	dev := &Device{Name: name, Mem: mem, SMs: sms, Driver: cu.Version(), ctx: ctx, fn: map[string]cu.Function{}}
	for _, m := range kernels.Modules() {
		ptx := m.PTX
		// STATESIM_PTX_DIR loads DIR/NAME.ptx instead of the embedded
		// copy: PTX just compiled on a machine without Go (make confirm
		// PTX_DIR=kernels after make ptx), before it is committed.
		if dir := os.Getenv("STATESIM_PTX_DIR"); dir != "" {
			b, err := os.ReadFile(filepath.Join(dir, m.Name+".ptx"))
			if err != nil {
				return nil, fmt.Errorf("cuda: STATESIM_PTX_DIR: %w", err)
			}
			ptx = string(b)
		}
		mod, err := cu.LoadData(ptx)
		if err != nil {
			return nil, fmt.Errorf("cuda: loading %s.ptx: %w", m.Name, err)
		}
		for _, k := range m.Kernels {
			f, err := mod.Function(k)
			if err != nil {
				return nil, fmt.Errorf("cuda: kernel %s in %s.ptx: %w", k, m.Name, err)
			}
			dev.fn[k] = f
		}
	}
	return dev, nil
}

// Alloc takes n bytes of plain device memory (never managed memory).
func (d *Device) Alloc(n int64) (cu.DevicePtr, error) {
	p, err := cu.MemAlloc(max(n, 4))
	if err != nil {
		return 0, fmt.Errorf("cuda: allocating %d bytes: %w", n, err)
	}
	d.alloc = append(d.alloc, p)
	return p, nil
}

// Free releases one allocation.
func (d *Device) Free(p cu.DevicePtr) error {
	for i, q := range d.alloc {
		if q == p {
			d.alloc = append(d.alloc[:i], d.alloc[i+1:]...)
			break
		}
	}
	return cu.MemFree(p)
}

// Close frees everything and destroys the context.
func (d *Device) Close() error {
	for _, p := range d.alloc {
		cu.MemFree(p)
	}
	d.alloc = nil
	return d.ctx.Destroy()
}

// Zero sets n float32s (or int32s) at p to 0.
func (d *Device) Zero(p cu.DevicePtr, n int64) error { return cu.MemsetD32(p, 0, n) }

// Fill sets n 32-bit words at p to the bit pattern v.
func (d *Device) Fill(p cu.DevicePtr, v uint32, n int64) error { return cu.MemsetD32(p, v, n) }

// Upload copies a host slice into device memory at p.
func Upload[T int32 | int64 | float32](p cu.DevicePtr, v []T) error {
	if len(v) == 0 {
		return nil
	}
	return cu.MemcpyHtoD(p, unsafe.Pointer(&v[0]), int64(len(v))*int64(unsafe.Sizeof(v[0])))
}

// Download copies device memory at p into a host slice.
func Download[T int32 | int64 | float32](v []T, p cu.DevicePtr) error {
	if len(v) == 0 {
		return nil
	}
	return cu.MemcpyDtoH(unsafe.Pointer(&v[0]), p, int64(len(v))*int64(unsafe.Sizeof(v[0])))
}

// NewBuffer allocates and uploads v.
func NewBuffer[T int32 | int64 | float32](d *Device, v []T) (cu.DevicePtr, error) {
	p, err := d.Alloc(int64(len(v)) * int64(unsafe.Sizeof(v[0])))
	if err != nil {
		return 0, err
	}
	return p, Upload(p, v)
}

// Sync waits for the device and reports the first asynchronous error.
func (d *Device) Sync() error { return cu.Synchronize() }

// Launch runs kernel name on a grid of blocks and waits for it, so a
// fault names the kernel that caused it. Arguments are
// cu.DevicePtr, int (passed as a C int), int64 (long long) or float32;
// each is widened into an 8-byte slot, as cu copies 8 bytes per argument.
func (d *Device) Launch(name string, grid, block [3]int, shared int, args ...any) error {
	f, ok := d.fn[name]
	if !ok {
		return fmt.Errorf("cuda: kernel %s not loaded", name)
	}
	slots := make([]uint64, len(args))
	ptrs := make([]unsafe.Pointer, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case cu.DevicePtr:
			slots[i] = uint64(v)
		case int:
			slots[i] = uint64(uint32(int32(v)))
		case int64:
			slots[i] = uint64(v)
		case float32:
			slots[i] = uint64(math.Float32bits(v))
		default:
			return fmt.Errorf("cuda: kernel %s argument %d: unsupported type %T", name, i, a)
		}
		ptrs[i] = unsafe.Pointer(&slots[i])
	}
	if grid[0] <= 0 || grid[1] <= 0 || grid[2] <= 0 {
		return nil // an empty launch
	}
	if err := f.LaunchAndSync(grid[0], grid[1], grid[2], block[0], block[1], block[2], shared, cu.Stream{}, ptrs); err != nil {
		return fmt.Errorf("cuda: kernel %s: %w", name, err)
	}
	return nil
}
