// One host/device annotation for model code: __host__ __device__ under a CUDA
// compiler, nothing under a host compiler. Model headers include no CUDA headers.
#pragma once

#if defined(__CUDACC__)
#define KB_HD __host__ __device__
#else
#define KB_HD
#endif

// A large model function that device code should call, not inline into every kernel that
// evaluates the model (each inlined copy costs the device compiler minutes).
#if defined(__CUDACC__)
#define KB_NOINLINE __noinline__
#else
#define KB_NOINLINE
#endif

// Inlined always: the transfer agent's loops and their policies (src/device/sim/transfer.h),
// which the walks call per op and the compilers otherwise keep out of line.
#if defined(__CUDACC__)
#define KB_INLINE __forceinline__
#elif defined(__GNUC__)
#define KB_INLINE inline __attribute__((always_inline))
#else
#define KB_INLINE inline
#endif
// A rarely taken path kept out of its caller (so the common path inlines as it would without
// it): not inlined on either side, and placed apart on the host.
#if defined(__CUDACC__)
#define KB_COLD __noinline__
#elif defined(__GNUC__)
#define KB_COLD __attribute__((noinline, cold))
#else
#define KB_COLD
#endif
