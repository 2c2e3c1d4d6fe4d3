;; SIMD dtype conversion kernels for prepare (WebAssembly 128-bit SIMD), bit for bit equal to
;; the scalar reference in formats/dtype.ts (floatBitsToHalfBits: RNE, overflow to ±Inf, NaN
;; payload kept) — the tests compare every bf16 input and a million f32 ones.
;; Assembled by scripts/build-wasm.mjs into convert-wasm.ts; edit this file, not that one.
;; Each export converts n elements (n a multiple of 8) from byte `src` to byte `dst` of the
;; module's own memory, which the caller reads into and writes from directly. The narrowing
;; ones (to f16) return how many results are ±Inf or NaN (issue #28: overflow is refused
;; unless allowed), counted in the same pass: prepare never looks at the weights twice.
(module
  (memory (export "memory") 1)

  ;; bf16 → f16. A bf16 in f16's normal range converts exactly (its 7 mantissa bits fit in
  ;; f16's 10): rebias the exponent by 112 and shift. Vectors holding anything else (zero,
  ;; f16-subnormal values, overflow, Inf, NaN) take the full path: subnormals rounded by the
  ;; FPU (bits(|x| + 0.5f) − bits(0.5f) is |x| in units of 2^-24, RNE), then selects.
  ;; Only the full path can produce Inf or NaN, so only it counts (the fast path pays nothing).
  (func (export "bf16_f16") (param $src i32) (param $dst i32) (param $n i32) (result i32)
    (local $cnt i32) (local $end i32) (local $h v128) (local $a v128) (local $r v128) (local $sub v128) (local $z v128)
    (local.set $end (i32.add (local.get $src) (i32.shl (local.get $n) (i32.const 1))))
    (block $out (loop $l
      (br_if $out (i32.ge_u (local.get $src) (local.get $end)))
      (local.set $h (v128.load (local.get $src)))
      (local.set $a (v128.and (local.get $h) (i16x8.splat (i32.const 0x7fff))))
      (local.set $r (i16x8.shl (i16x8.sub (local.get $a) (i16x8.splat (i32.const 0x3800))) (i32.const 3)))
      ;; all lanes normal: 0x3880 <= a < 0x4780
      (if (i32.eqz (i16x8.all_true (i16x8.lt_u (i16x8.sub (local.get $a) (i16x8.splat (i32.const 0x3880))) (i16x8.splat (i32.const 0x0f00)))))
        (then
          (local.set $sub (i16x8.narrow_i32x4_u
            (i32x4.sub
              (f32x4.add (i8x16.shuffle 0 1 16 17 0 1 18 19 0 1 20 21 0 1 22 23 (local.get $z) (local.get $a)) (i32x4.splat (i32.const 0x3f000000)))
              (i32x4.splat (i32.const 0x3f000000)))
            (i32x4.sub
              (f32x4.add (i8x16.shuffle 0 1 24 25 0 1 26 27 0 1 28 29 0 1 30 31 (local.get $z) (local.get $a)) (i32x4.splat (i32.const 0x3f000000)))
              (i32x4.splat (i32.const 0x3f000000)))))
          (local.set $r (v128.bitselect (local.get $sub) (local.get $r) (i16x8.lt_s (local.get $a) (i16x8.splat (i32.const 0x3880)))))
          ;; >= 2^16 overflows to Inf (bf16's largest below it, 65280, is a normal f16)
          (local.set $r (v128.bitselect (i16x8.splat (i32.const 0x7c00)) (local.get $r) (i16x8.ge_s (local.get $a) (i16x8.splat (i32.const 0x4780)))))
          ;; NaN: quiet, top payload bits kept
          (local.set $r (v128.bitselect
            (v128.or (i16x8.splat (i32.const 0x7e00)) (v128.and (i16x8.shl (local.get $a) (i32.const 3)) (i16x8.splat (i32.const 0x3ff))))
            (local.get $r) (i16x8.gt_s (local.get $a) (i16x8.splat (i32.const 0x7f80)))))
          ;; lanes with an all-ones f16 exponent (no sign bit in $r yet)
          (local.set $cnt (i32.add (local.get $cnt)
            (i32.popcnt (i16x8.bitmask (i16x8.ge_u (local.get $r) (i16x8.splat (i32.const 0x7c00)))))))))
      (v128.store (local.get $dst) (v128.or (local.get $r) (v128.and (local.get $h) (i16x8.splat (i32.const 0x8000)))))
      (local.set $src (i32.add (local.get $src) (i32.const 16)))
      (local.set $dst (i32.add (local.get $dst) (i32.const 16)))
      (br $l)))
    (local.get $cnt))

  ;; bf16 → f32: the bf16 bits in the high half of each f32 (interleave with zero bytes).
  (func (export "bf16_f32") (param $src i32) (param $dst i32) (param $n i32)
    (local $end i32) (local $h v128) (local $z v128)
    (local.set $end (i32.add (local.get $src) (i32.shl (local.get $n) (i32.const 1))))
    (block $out (loop $l
      (br_if $out (i32.ge_u (local.get $src) (local.get $end)))
      (local.set $h (v128.load (local.get $src)))
      (v128.store (local.get $dst) (i8x16.shuffle 0 1 16 17 0 1 18 19 0 1 20 21 0 1 22 23 (local.get $z) (local.get $h)))
      (v128.store offset=16 (local.get $dst) (i8x16.shuffle 0 1 24 25 0 1 26 27 0 1 28 29 0 1 30 31 (local.get $z) (local.get $h)))
      (local.set $src (i32.add (local.get $src) (i32.const 16)))
      (local.set $dst (i32.add (local.get $dst) (i32.const 32)))
      (br $l))))

;; f32 → f16 on four lanes of f32 bits: the result in each lane's low 16 bits.
  ;; normal: rebias, then round to nearest even at bit 13; subnormal: the 0.5f addition;
  ;; >= 65520 → Inf; NaN → quiet with the top payload bits. Also returns $big, the lanes that
  ;; became ±Inf or NaN (all ones), for the caller's count.
  (func $half (param $u v128) (result v128 v128)
    (local $a v128) (local $r v128) (local $big v128)
    (local.set $a (v128.and (local.get $u) (i32x4.splat (i32.const 0x7fffffff))))
    (local.set $r (i32x4.sub (local.get $a) (i32x4.splat (i32.const 0x38000000))))
    (local.set $r (i32x4.shr_u
      (i32x4.add (i32x4.add (local.get $r) (i32x4.splat (i32.const 0xfff)))
                 (v128.and (i32x4.shr_u (local.get $r) (i32.const 13)) (i32x4.splat (i32.const 1))))
      (i32.const 13)))
    (local.set $r (v128.bitselect
      (i32x4.sub (f32x4.add (local.get $a) (i32x4.splat (i32.const 0x3f000000))) (i32x4.splat (i32.const 0x3f000000)))
      (local.get $r) (i32x4.lt_s (local.get $a) (i32x4.splat (i32.const 0x38800000)))))
    (local.set $big (i32x4.ge_s (local.get $a) (i32x4.splat (i32.const 0x477ff000))))
    (local.set $r (v128.bitselect (i32x4.splat (i32.const 0x7c00)) (local.get $r) (local.get $big)))
    (local.set $r (v128.bitselect
      (v128.or (i32x4.splat (i32.const 0x7e00)) (v128.and (i32x4.shr_u (local.get $a) (i32.const 13)) (i32x4.splat (i32.const 0x3ff))))
      (local.get $r) (i32x4.gt_s (local.get $a) (i32x4.splat (i32.const 0x7f800000)))))
    (v128.or (local.get $r) (i32x4.shr_u (v128.and (local.get $u) (i32x4.splat (i32.const 0x80000000))) (i32.const 16)))
    (local.get $big))

  ;; Counts the lanes $half marks (overflow, Inf, NaN: the f16 results ±Inf or NaN) in i32 lane
  ;; counters, one subtract per four elements, reusing the compare the conversion makes anyway
  ;; (measured: a separate test of the results cost several per cent).
  (func (export "f32_f16") (param $src i32) (param $dst i32) (param $n i32) (result i32)
    (local $end i32) (local $lo v128) (local $hi v128) (local $acc v128)
    (local.set $end (i32.add (local.get $src) (i32.shl (local.get $n) (i32.const 2))))
    (block $out (loop $l
      (br_if $out (i32.ge_u (local.get $src) (local.get $end)))
      (call $half (v128.load (local.get $src)))
      (local.set $acc (i32x4.add (local.get $acc)))
      (local.set $lo)
      (call $half (v128.load offset=16 (local.get $src)))
      (local.set $acc (i32x4.add (local.get $acc)))
      (local.set $hi)
      (v128.store (local.get $dst) (i16x8.narrow_i32x4_u (local.get $lo) (local.get $hi)))
      (local.set $src (i32.add (local.get $src) (i32.const 32)))
      (local.set $dst (i32.add (local.get $dst) (i32.const 16)))
      (br $l)))
    ;; the masks are -1 per marked lane
    (i32.sub (i32.const 0) (i32.add
      (i32.add (i32x4.extract_lane 0 (local.get $acc)) (i32x4.extract_lane 1 (local.get $acc)))
      (i32.add (i32x4.extract_lane 2 (local.get $acc)) (i32x4.extract_lane 3 (local.get $acc))))))

  ;; [rows, cols] of 16-bit elements at src → [cols, rows] at dst (rows and cols multiples of
  ;; 8; src and dst apart): 8×8 blocks, each transposed in registers by three rounds of
  ;; interleaves (16-, 32-, then 64-bit lanes). MoE stacking writes each expert's [out, in]
  ;; weight as [in, out]; a conversion, if any, runs over dst afterwards (bf16_f16 in place).
  (func (export "transpose16") (param $src i32) (param $dst i32) (param $rows i32) (param $cols i32)
    (local $r i32) (local $c i32) (local $sp i32) (local $dp i32) (local $ss i32) (local $ds i32)
    (local $r0 v128) (local $r1 v128) (local $r2 v128) (local $r3 v128) (local $r4 v128) (local $r5 v128) (local $r6 v128) (local $r7 v128)
    (local $t0 v128) (local $t1 v128) (local $t2 v128) (local $t3 v128) (local $t4 v128) (local $t5 v128) (local $t6 v128) (local $t7 v128)
    (local.set $ss (i32.shl (local.get $cols) (i32.const 1)))
    (local.set $ds (i32.shl (local.get $rows) (i32.const 1)))
    (block $done_r (loop $lr
      (br_if $done_r (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $c (i32.const 0))
      (block $done_c (loop $lc
        (br_if $done_c (i32.ge_u (local.get $c) (local.get $cols)))
        ;; rows r .. r+7, columns c .. c+7
        (local.set $sp (i32.add (local.get $src) (i32.add (i32.mul (local.get $r) (local.get $ss)) (i32.shl (local.get $c) (i32.const 1)))))
        (local.set $r0 (v128.load (local.get $sp)))
        (local.set $r1 (v128.load (local.tee $sp (i32.add (local.get $sp) (local.get $ss)))))
        (local.set $r2 (v128.load (local.tee $sp (i32.add (local.get $sp) (local.get $ss)))))
        (local.set $r3 (v128.load (local.tee $sp (i32.add (local.get $sp) (local.get $ss)))))
        (local.set $r4 (v128.load (local.tee $sp (i32.add (local.get $sp) (local.get $ss)))))
        (local.set $r5 (v128.load (local.tee $sp (i32.add (local.get $sp) (local.get $ss)))))
        (local.set $r6 (v128.load (local.tee $sp (i32.add (local.get $sp) (local.get $ss)))))
        (local.set $r7 (v128.load (local.tee $sp (i32.add (local.get $sp) (local.get $ss)))))
        ;; 16-bit interleaves of row pairs
        (local.set $t0 (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $r0) (local.get $r1)))
        (local.set $t1 (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $r0) (local.get $r1)))
        (local.set $t2 (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $r2) (local.get $r3)))
        (local.set $t3 (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $r2) (local.get $r3)))
        (local.set $t4 (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $r4) (local.get $r5)))
        (local.set $t5 (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $r4) (local.get $r5)))
        (local.set $t6 (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $r6) (local.get $r7)))
        (local.set $t7 (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $r6) (local.get $r7)))
        ;; 32-bit interleaves
        (local.set $r0 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $t0) (local.get $t2)))
        (local.set $r1 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $t0) (local.get $t2)))
        (local.set $r2 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $t1) (local.get $t3)))
        (local.set $r3 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $t1) (local.get $t3)))
        (local.set $r4 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $t4) (local.get $t6)))
        (local.set $r5 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $t4) (local.get $t6)))
        (local.set $r6 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $t5) (local.get $t7)))
        (local.set $r7 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $t5) (local.get $t7)))
        ;; 64-bit halves: output rows c .. c+7 (columns r .. r+7)
        (local.set $dp (i32.add (local.get $dst) (i32.add (i32.mul (local.get $c) (local.get $ds)) (i32.shl (local.get $r) (i32.const 1)))))
        (v128.store (local.get $dp) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $r0) (local.get $r4)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $r0) (local.get $r4)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $r1) (local.get $r5)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $r1) (local.get $r5)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $r2) (local.get $r6)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $r2) (local.get $r6)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $r3) (local.get $r7)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $r3) (local.get $r7)))
        (local.set $c (i32.add (local.get $c) (i32.const 8)))
        (br $lc)))
      (local.set $r (i32.add (local.get $r) (i32.const 8)))
      (br $lr))))
)
