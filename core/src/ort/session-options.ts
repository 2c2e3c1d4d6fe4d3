/**
 * ONNX Runtime session options for bound models, chosen from measurements
 * (bench/compile.bench.mjs measures them again on every run):
 *
 * 378 MiB of f32 weights bound in place (Gather [32000, 2048] + 8 Gemm/MatMul [2048, 2048]),
 * onnxruntime-node 1.30, Node 20, RSS read from /proc/self/status:
 *
 * | options                                   | create ms | RssAnon Δ | RssFile Δ after a run |
 * |-------------------------------------------|-----------|-----------|-----------------------|
 * | defaults (prepacking on)                  | 187–247   | +40 MiB   | +19 MiB, peak +137    |
 * | session.disable_prepacking=1              | 19–22     | +8 MiB    | +147 MiB (page cache) |
 * | graphOptimizationLevel=disabled           | 210–316   | +40 MiB   | peak +137–153         |
 * | disable_prepacking + optimization basic   | 20        | +8 MiB    | +147 MiB              |
 * | disable_prepacking + enableCpuMemArena=0  | 22        | +8 MiB    | +147 MiB              |
 *
 * Llama-3.1-8B's real graph (291 weights, 29.9 GiB f32, sparse shards) failed to open with
 * `std::bad_alloc`: with the memory pattern on, ORT reserves one anonymous buffer the size of
 * all initializers (strace: `mmap(NULL, 32121053184, …, MAP_PRIVATE|MAP_ANONYMOUS) = ENOMEM`),
 * which the kernel refuses once it exceeds RAM + swap (22 GiB still opened, 30 GiB did not).
 * `enableMemPattern: false` removes that reservation: the 30 GiB model opens in ~600 ms with
 * +17 MiB anonymous memory, and decode/prefill speed on the model above is unchanged (±10 %).
 *
 * Prepacking copies every MatMul/Gemm weight into private (anonymous) memory; without it
 * the weights stay file-backed pages of the prepared safetensors files — shared, evictable,
 * never a second copy — and sessions open ~10× faster. Optimization level and the arena
 * change nothing measurable, so they keep ORT's defaults. Prepacked kernels decode ~1.5×
 * faster on this machine, so `prepack` turns prepacking back on for whoever trades memory
 * for speed.
 */

/**
 * ONNX Runtime's own logger writes ANSI-coloured lines straight to stderr (a failing Gather
 * prints `[E:onnxruntime:…]` before our one-line error). Every failure is turned into a
 * `weight-spec:` line by the caller, so the session logs only fatal errors.
 */
export const ORT_LOG_SEVERITY_FATAL = 4;

/** Options for `InferenceSession.create`: no memory pattern; prepacking off unless asked for; ORT's logger silenced. */
export function ortSessionOptions(prepack = false): Record<string, unknown> {
  return {
    enableMemPattern: false,
    logSeverityLevel: ORT_LOG_SEVERITY_FATAL,
    ...(prepack ? {} : { extra: { session: { disable_prepacking: '1' } } }),
  };
}
