;; SIMD dtype conversion kernels for prepare (WebAssembly 128-bit SIMD), bit for bit equal to
;; the scalar reference in formats/dtype.ts (floatBitsToHalfBits: RNE, overflow to ±Inf, NaN
;; payload kept) — the tests compare every bf16 input and a million f32 ones.
;; Assembled by scripts/build-wasm.mjs into convert-wasm.ts; edit this file, not that one.
;; Each conversion export converts n elements (n a multiple of 8; fp8_dequant: any n, see its
;; section below) from byte `src` to byte `dst` of the module's own memory, which the caller
;; reads into and writes from directly. The narrowing
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
    (local $r i32) (local $c i32) (local $ct i32) (local $ce i32) (local $sp i32) (local $dp i32) (local $ss i32) (local $ds i32)
    (local $r0 v128) (local $r1 v128) (local $r2 v128) (local $r3 v128) (local $r4 v128) (local $r5 v128) (local $r6 v128) (local $r7 v128)
    (local $t0 v128) (local $t1 v128) (local $t2 v128) (local $t3 v128) (local $t4 v128) (local $t5 v128) (local $t6 v128) (local $t7 v128)
    (local.set $ss (i32.shl (local.get $cols) (i32.const 1)))
    (local.set $ds (i32.shl (local.get $rows) (i32.const 1)))
    ;; column tiles of 32 (64: the same; 128: 1.6× slower): each output row is written
    ;; sequentially and few rows are open at once (the whole width at once: 2.5× slower)
    (block $done_t (loop $lt
      (br_if $done_t (i32.ge_u (local.get $ct) (local.get $cols)))
      (local.set $ce (select (local.get $cols) (i32.add (local.get $ct) (i32.const 32)) (i32.gt_u (i32.add (local.get $ct) (i32.const 32)) (local.get $cols))))
      (local.set $r (i32.const 0))
    (block $done_r (loop $lr
      (br_if $done_r (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $c (local.get $ct))
      (block $done_c (loop $lc
        (br_if $done_c (i32.ge_u (local.get $c) (local.get $ce)))
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
      (br $lr)))
      (local.set $ct (i32.add (local.get $ct) (i32.const 32)))
      (br $lt))))

  ;; [rows, cols] of 32-bit elements at src → [cols, rows] at dst (rows and cols multiples of
  ;; 4; src and dst apart): 4×4 blocks, each transposed in registers by two rounds of interleaves
  ;; (32-, then 64-bit lanes). FP8 experts dequantized to f32 are stacked transposed through it.
  (func (export "transpose32") (param $src i32) (param $dst i32) (param $rows i32) (param $cols i32)
    (local $r i32) (local $c i32) (local $ct i32) (local $ce i32) (local $sp i32) (local $dp i32) (local $ss i32) (local $ds i32)
    (local $r0 v128) (local $r1 v128) (local $r2 v128) (local $r3 v128)
    (local $t0 v128) (local $t1 v128) (local $t2 v128) (local $t3 v128)
    (local.set $ss (i32.shl (local.get $cols) (i32.const 2)))
    (local.set $ds (i32.shl (local.get $rows) (i32.const 2)))
    ;; column tiles of 8 (16: 1.1×, 32: 1.3× slower): each output row is written
    ;; sequentially and few rows are open at once (the whole width at once: 1.6× slower)
    (block $done_t (loop $lt
      (br_if $done_t (i32.ge_u (local.get $ct) (local.get $cols)))
      (local.set $ce (select (local.get $cols) (i32.add (local.get $ct) (i32.const 8)) (i32.gt_u (i32.add (local.get $ct) (i32.const 8)) (local.get $cols))))
      (local.set $r (i32.const 0))
    (block $done_r (loop $lr
      (br_if $done_r (i32.ge_u (local.get $r) (local.get $rows)))
      (local.set $c (local.get $ct))
      (block $done_c (loop $lc
        (br_if $done_c (i32.ge_u (local.get $c) (local.get $ce)))
        ;; rows r .. r+3, columns c .. c+3
        (local.set $sp (i32.add (local.get $src) (i32.add (i32.mul (local.get $r) (local.get $ss)) (i32.shl (local.get $c) (i32.const 2)))))
        (local.set $r0 (v128.load (local.get $sp)))
        (local.set $r1 (v128.load (local.tee $sp (i32.add (local.get $sp) (local.get $ss)))))
        (local.set $r2 (v128.load (local.tee $sp (i32.add (local.get $sp) (local.get $ss)))))
        (local.set $r3 (v128.load (local.tee $sp (i32.add (local.get $sp) (local.get $ss)))))
        ;; 32-bit interleaves of row pairs: t0 = a0 b0 a1 b1, t1 = a2 b2 a3 b3, t2/t3 the same of rows 2, 3
        (local.set $t0 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $r0) (local.get $r1)))
        (local.set $t1 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $r0) (local.get $r1)))
        (local.set $t2 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $r2) (local.get $r3)))
        (local.set $t3 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $r2) (local.get $r3)))
        ;; 64-bit halves: output rows c .. c+3 (columns r .. r+3)
        (local.set $dp (i32.add (local.get $dst) (i32.add (i32.mul (local.get $c) (local.get $ds)) (i32.shl (local.get $r) (i32.const 2)))))
        (v128.store (local.get $dp) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t0) (local.get $t2)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $t0) (local.get $t2)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $t1) (local.get $t3)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $t1) (local.get $t3)))
        (local.set $c (i32.add (local.get $c) (i32.const 4)))
        (br $lc)))
      (local.set $r (i32.add (local.get $r) (i32.const 4)))
      (br $lr)))
      (local.set $ct (i32.add (local.get $ct) (i32.const 8)))
      (br $lt))))

  ;; ---- FP8 dequantization (E4M3 / E5M2 → f32, bf16 or f16, times a block scale) ----
  ;; Decoding is arithmetic, not a table: a code's exponent and mantissa bits shifted into an
  ;; f32's (by 20 for E4M3, 21 for E5M2) make an f32 2^120 (2^112) times smaller than the code's
  ;; value, subnormal codes included (they land on f32 subnormals, exact); one multiply by that
  ;; power of two is exact, and the multiply by the scale is the one f32 rounding the reference
  ;; makes (f32(q) · scale, as DeepSeek's weight_dequant_kernel). The scale multiply is fused
  ;; into the widening and a bf16/f16 result is rounded straight from the register: no f32
  ;; buffer. NaN codes become quiet NaNs (E4M3's 0x7fc00000, what the scalar kernel's
  ;; Float32Array holds; E5M2's keep their sign and payload, as a half's do) and are counted in
  ;; $fp8_nan; E5M2's ±Inf codes give ±Inf · scale. Everything is inlined in the loop but the
  ;; rare vectors (NaN/Inf codes, or a scale large enough to overflow the target): V8 does not
  ;; inline wasm calls, and calls in the loop measured half the speed.
  (global $fp8_nan (export "fp8_nan") (mut i32) (i32.const 0))

  ;; Four lanes of any codes (u32 each): f32 bits of code · scale. Inf codes ($inf; 0x100 when
  ;; the format has none) give ±Inf · scale; NaN codes (>= $nan) a quiet NaN keeping the code's
  ;; sign and payload bits that $keep picks.
  (func $fp8_any (param $w v128) (param $shift i32) (param $mult v128) (param $s v128) (param $nan v128) (param $inf v128) (param $keep v128) (result v128)
    (local $a v128) (local $sign v128)
    (local.set $a (v128.and (local.get $w) (i32x4.splat (i32.const 0x7f))))
    (local.set $sign (v128.and (i32x4.shl (local.get $w) (i32.const 24)) (i32x4.splat (i32.const 0x80000000))))
    (v128.bitselect
      (v128.or (i32x4.splat (i32.const 0x7fc00000))
        (v128.and (local.get $keep) (v128.or (i32x4.shl (local.get $a) (local.get $shift)) (local.get $sign))))
      (v128.bitselect
        (f32x4.mul (v128.or (i32x4.splat (i32.const 0x7f800000)) (local.get $sign)) (local.get $s))
        (f32x4.mul
          (f32x4.mul (v128.or (i32x4.shl (local.get $a) (local.get $shift)) (local.get $sign)) (local.get $mult))
          (local.get $s))
        (i32x4.eq (local.get $a) (local.get $inf)))
      (i32x4.ge_u (local.get $a) (local.get $nan))))

  ;; $half's f16 bits alone.
  (func $half1 (param $u v128) (result v128)
    (call $half (local.get $u))
    (drop))

  ;; f32 bits → bf16 bits in each lane's high half, round to nearest even (a NaN here is quiet
  ;; with its low 16 bits zero: it truncates, as the scalar kernel's does).
  (func $bf16hi (param $r v128) (result v128)
    (i32x4.add (i32x4.add (local.get $r) (i32x4.splat (i32.const 0x7fff)))
               (v128.and (i32x4.shr_u (local.get $r) (i32.const 16)) (i32x4.splat (i32.const 1)))))

  ;; Dequantizes $n codes of one matrix row from byte $src into $dst, the row segment starting
  ;; at column $col; the row's scales are f32s at $scales, one per $bC columns (a partial last
  ;; block is just a shorter run). $fmt: 0 E4M3, 1 E5M2; $to: 0 f32, 1 bf16, 2 f16. Returns how
  ;; many results are ±Inf or NaN in a 16-bit target; NaN codes are added to $fp8_nan.
  (func $fp8_dequant (export "fp8_dequant")
    (param $src i32) (param $dst i32) (param $n i32) (param $scales i32) (param $bC i32) (param $col i32) (param $fmt i32) (param $to i32)
    (result i32)
    (local $shift i32) (local $mult v128) (local $nan v128) (local $inf v128) (local $keep v128) (local $nan16 v128) (local $spec16 v128)
    (local $max f32) (local $limit f32) (local $sf f32) (local $mask16 v128) (local $slow i32) (local $z v128)
    (local $end i32) (local $runEnd i32) (local $blk i32) (local $s v128) (local $cnt i32) (local $nans i32) (local $spec v128)
    (local $h v128) (local $a v128) (local $u v128) (local $r0 v128) (local $r1 v128) (local $o v128) (local $osh i32)
    (local $multf f32) (local $sm f32) (local $sms v128)
    (if (local.get $fmt)
      (then
        (local.set $shift (i32.const 21))
        (local.set $mult (i32x4.splat (i32.const 0x77800000)))
        (local.set $nan (i32x4.splat (i32.const 0x7d)))
        (local.set $inf (i32x4.splat (i32.const 0x7c)))
        (local.set $keep (i32x4.splat (i32.const 0x80600000)))
        (local.set $nan16 (i16x8.splat (i32.const 0x7d)))
        (local.set $spec (i16x8.splat (i32.const 0x7c)))
        (local.set $max (f32.const 57344))
        (local.set $multf (f32.const 0x1p112)))
      (else
        (local.set $shift (i32.const 20))
        (local.set $mult (i32x4.splat (i32.const 0x7b800000)))
        (local.set $nan (i32x4.splat (i32.const 0x7f)))
        (local.set $inf (i32x4.splat (i32.const 0x100)))
        (local.set $nan16 (i16x8.splat (i32.const 0x7f)))
        (local.set $spec (i16x8.splat (i32.const 0x7f)))
        (local.set $max (f32.const 448))
        (local.set $multf (f32.const 0x1p120))))
    ;; per target: bytes per element (a shift), the exponent mask of a non-finite 16-bit result,
    ;; and the magnitude from which a result rounds to ±Inf (f32: not counted, never slow)
    (local.set $osh (select (i32.const 2) (i32.const 1) (i32.eqz (local.get $to))))
    (local.set $limit (f32.const inf))
    (if (i32.eq (local.get $to) (i32.const 1))
      (then (local.set $mask16 (i16x8.splat (i32.const 0x7f80))) (local.set $limit (f32.reinterpret_i32 (i32.const 0x7f7f8000)))))
    (if (i32.eq (local.get $to) (i32.const 2))
      (then (local.set $mask16 (i16x8.splat (i32.const 0x7c00))) (local.set $limit (f32.const 65520))))
    (local.set $end (i32.add (local.get $src) (local.get $n)))
    (local.set $blk (i32.div_u (local.get $col) (local.get $bC)))
    (block $done (loop $runs
      (br_if $done (i32.ge_u (local.get $src) (local.get $end)))
      (local.set $sf (f32.load (i32.add (local.get $scales) (i32.shl (local.get $blk) (i32.const 2)))))
      (local.set $s (f32x4.splat (local.get $sf)))
      ;; the common path multiplies once, by scale · 2^120 (2^112): exact when that is a normal
      ;; f32, and then code · 2^-120 times it is the same real product, rounded once
      (local.set $sm (f32.mul (local.get $sf) (local.get $multf)))
      (local.set $sms (f32x4.splat (local.get $sm)))
      ;; a scale that can take a finite code past the target's range, or whose product is not
      ;; normal, sends every vector of the run down the general path (compare ≥ 0: always true)
      (local.set $spec16 (local.get $spec))
      (if (i32.or
            (f32.ge (f32.mul (f32.abs (local.get $sf)) (local.get $max)) (local.get $limit))
            (i32.eqz (i32.and (f32.lt (f32.abs (local.get $sm)) (f32.const inf))
                              (f32.ge (f32.abs (local.get $sm)) (f32.const 0x1p-126)))))
        (then (local.set $spec16 (local.get $z))))
      ;; this block's columns of the segment
      (local.set $runEnd (i32.add (local.get $src)
        (i32.sub (i32.mul (i32.add (local.get $blk) (i32.const 1)) (local.get $bC)) (local.get $col))))
      (if (i32.gt_u (local.get $runEnd) (local.get $end)) (then (local.set $runEnd (local.get $end))))
      (local.set $col (i32.add (local.get $col) (i32.sub (local.get $runEnd) (local.get $src))))
      (local.set $blk (i32.add (local.get $blk) (i32.const 1)))
      ;; 8 codes at a time, as u16 lanes
      (block $vdone (loop $v
        (br_if $vdone (i32.gt_u (i32.add (local.get $src) (i32.const 8)) (local.get $runEnd)))
        (local.set $h (v128.load8x8_u (local.get $src)))
        (local.set $a (v128.and (local.get $h) (i16x8.splat (i32.const 0x7f))))
        (local.set $slow (v128.any_true (i16x8.ge_u (local.get $a) (local.get $spec16))))
        (if (local.get $slow)
          (then
            (local.set $nans (i32.add (local.get $nans)
              (i32.popcnt (i16x8.bitmask (i16x8.ge_u (local.get $a) (local.get $nan16))))))
            (local.set $r0 (call $fp8_any (i32x4.extend_low_i16x8_u (local.get $h)) (local.get $shift) (local.get $mult) (local.get $s) (local.get $nan) (local.get $inf) (local.get $keep)))
            (local.set $r1 (call $fp8_any (i32x4.extend_high_i16x8_u (local.get $h)) (local.get $shift) (local.get $mult) (local.get $s) (local.get $nan) (local.get $inf) (local.get $keep))))
          (else
            ;; each lane's f32 high half: magnitude bits shifted into place, sign at the top
            (local.set $u (v128.or
              (i16x8.shl (local.get $a) (i32.sub (local.get $shift) (i32.const 16)))
              (i16x8.shl (v128.and (local.get $h) (i16x8.splat (i32.const 0x80))) (i32.const 8))))
            (local.set $r0 (f32x4.mul
              (i8x16.shuffle 0 1 16 17 0 1 18 19 0 1 20 21 0 1 22 23 (local.get $z) (local.get $u)) (local.get $sms)))
            (local.set $r1 (f32x4.mul
              (i8x16.shuffle 0 1 24 25 0 1 26 27 0 1 28 29 0 1 30 31 (local.get $z) (local.get $u)) (local.get $sms)))))
        (if (i32.eqz (local.get $to))
          (then
            (v128.store (local.get $dst) (local.get $r0))
            (v128.store offset=16 (local.get $dst) (local.get $r1)))
          (else
            (if (i32.eq (local.get $to) (i32.const 1))
              (then
                ;; bf16: the rounded high halves
                (local.set $o (i8x16.shuffle 2 3 6 7 10 11 14 15 18 19 22 23 26 27 30 31
                  (i32x4.add (i32x4.add (local.get $r0) (i32x4.splat (i32.const 0x7fff)))
                             (v128.and (i32x4.shr_u (local.get $r0) (i32.const 16)) (i32x4.splat (i32.const 1))))
                  (i32x4.add (i32x4.add (local.get $r1) (i32x4.splat (i32.const 0x7fff)))
                             (v128.and (i32x4.shr_u (local.get $r1) (i32.const 16)) (i32x4.splat (i32.const 1)))))))
              (else
                ;; f16: the slow vectors (any ±Inf/NaN result) through $half; the others are finite
                ;; in f16, normal (rebias, round at bit 13) or subnormal (the 0.5f addition), as $half
                (if (local.get $slow)
                  (then (local.set $o (i16x8.narrow_i32x4_u (call $half1 (local.get $r0)) (call $half1 (local.get $r1)))))
                  (else (local.set $o (i16x8.narrow_i32x4_u
                    (v128.or
                    (v128.bitselect
                      (i32x4.sub (f32x4.add (v128.and (local.get $r0) (i32x4.splat (i32.const 0x7fffffff))) (i32x4.splat (i32.const 0x3f000000))) (i32x4.splat (i32.const 0x3f000000)))
                      (i32x4.shr_u
                        (i32x4.add (i32x4.add (local.tee $a (i32x4.sub (v128.and (local.get $r0) (i32x4.splat (i32.const 0x7fffffff))) (i32x4.splat (i32.const 0x38000000)))) (i32x4.splat (i32.const 0xfff)))
                                   (v128.and (i32x4.shr_u (local.get $a) (i32.const 13)) (i32x4.splat (i32.const 1))))
                        (i32.const 13))
                      (i32x4.lt_s (local.get $a) (i32x4.splat (i32.const 0x00800000))))
                    (i32x4.shr_u (v128.and (local.get $r0) (i32x4.splat (i32.const 0x80000000))) (i32.const 16)))
                    (v128.or
                    (v128.bitselect
                      (i32x4.sub (f32x4.add (v128.and (local.get $r1) (i32x4.splat (i32.const 0x7fffffff))) (i32x4.splat (i32.const 0x3f000000))) (i32x4.splat (i32.const 0x3f000000)))
                      (i32x4.shr_u
                        (i32x4.add (i32x4.add (local.tee $a (i32x4.sub (v128.and (local.get $r1) (i32x4.splat (i32.const 0x7fffffff))) (i32x4.splat (i32.const 0x38000000)))) (i32x4.splat (i32.const 0xfff)))
                                   (v128.and (i32x4.shr_u (local.get $a) (i32.const 13)) (i32x4.splat (i32.const 1))))
                        (i32.const 13))
                      (i32x4.lt_s (local.get $a) (i32x4.splat (i32.const 0x00800000))))
                    (i32x4.shr_u (v128.and (local.get $r1) (i32x4.splat (i32.const 0x80000000))) (i32.const 16)))))))))
            (if (local.get $slow)
              (then (local.set $cnt (i32.add (local.get $cnt) (i32.popcnt (i16x8.bitmask
                (i16x8.eq (v128.and (local.get $o) (local.get $mask16)) (local.get $mask16))))))))
            (v128.store (local.get $dst) (local.get $o))))
        (local.set $src (i32.add (local.get $src) (i32.const 8)))
        (local.set $dst (i32.add (local.get $dst) (i32.shl (i32.const 8) (local.get $osh))))
        (br $v)))
      ;; the run's last codes, one at a time through the same lanes
      (block $sdone (loop $sc
        (br_if $sdone (i32.ge_u (local.get $src) (local.get $runEnd)))
        (local.set $h (i32x4.splat (i32.load8_u (local.get $src))))
        (local.set $nans (i32.sub (local.get $nans)
          (i32x4.extract_lane 0 (i32x4.ge_u (v128.and (local.get $h) (i32x4.splat (i32.const 0x7f))) (local.get $nan)))))
        (local.set $r0 (call $fp8_any (local.get $h) (local.get $shift) (local.get $mult) (local.get $s) (local.get $nan) (local.get $inf) (local.get $keep)))
        (if (i32.eqz (local.get $to))
          (then (v128.store32_lane 0 (local.get $dst) (local.get $r0)))
          (else
            (if (i32.eq (local.get $to) (i32.const 1))
              (then (local.set $o (i32x4.shr_u (call $bf16hi (local.get $r0)) (i32.const 16))))
              (else (local.set $o (call $half1 (local.get $r0)))))
            ;; lane 0's low half
            (local.set $cnt (i32.sub (local.get $cnt) (i16x8.extract_lane_s 0
              (i16x8.eq (v128.and (local.get $o) (local.get $mask16)) (local.get $mask16)))))
            (v128.store16_lane 0 (local.get $dst) (local.get $o))))
        (local.set $src (i32.add (local.get $src) (i32.const 1)))
        (local.set $dst (i32.add (local.get $dst) (i32.shl (i32.const 1) (local.get $osh))))
        (br $sc)))
      (br $runs)))
    (global.set $fp8_nan (i32.add (global.get $fp8_nan) (local.get $nans)))
    (local.get $cnt))

  ;; ---- FP8 → bf16 by table lookup (the common case of DeepSeek-style checkpoints) ----
  ;; A finite code of exponent field E ≥ 1 is 1.m · 2^(E − bias); times a scale s, rounded to f32
  ;; and then to bf16, its bits are those of the same mantissa at a smaller exponent plus the
  ;; exponent difference in the exponent field — exactly, as long as every value on the way is a
  ;; normal f32 and finite in bf16 (rounding to nearest does not depend on the exponent then).
  ;; So per scale block a 16-entry table V of bf16 bits for the code's low nibble (E's low bit(s)
  ;; and the mantissa; E4M3: 1 exponent bit + 3 mantissa bits, E5M2: 2 + 2) holds the products
  ;; at the smallest exponents, and a code's result is V[nibble] + ((code's higher exponent bits)
  ;; << 8): two byte lookups (i8x16.swizzle), an add and the sign (xor: the scale may be
  ;; negative). Codes below 16 (zero, subnormals, the lowest exponents) come from a second table
  ;; W that holds their exact results. The tables are made by the exact path ($fp8_any), so they
  ;; are right by construction; a block whose scale breaks the conditions (a product that is not
  ;; normal, or that overflows bf16), and vectors holding NaN/Inf codes, take the exact path.
  (global $fp8_bad (mut i32) (i32.const 0))

  ;; Eight codes (u16 lanes) times scale $sf in bf16 bits, by the exact path (as fp8_dequant's
  ;; slow vectors): NaN codes are added to $fp8_nan, ±Inf/NaN results to $fp8_bad.
  (func $fp8_bf16x8 (param $h v128) (param $sf f32) (param $fmt i32) (result v128)
    (local $shift i32) (local $mult v128) (local $nan v128) (local $inf v128) (local $keep v128) (local $nan16 v128) (local $s v128) (local $o v128)
    (if (local.get $fmt)
      (then
        (local.set $shift (i32.const 21))
        (local.set $mult (i32x4.splat (i32.const 0x77800000)))
        (local.set $nan (i32x4.splat (i32.const 0x7d)))
        (local.set $inf (i32x4.splat (i32.const 0x7c)))
        (local.set $keep (i32x4.splat (i32.const 0x80600000)))
        (local.set $nan16 (i16x8.splat (i32.const 0x7d))))
      (else
        (local.set $shift (i32.const 20))
        (local.set $mult (i32x4.splat (i32.const 0x7b800000)))
        (local.set $nan (i32x4.splat (i32.const 0x7f)))
        (local.set $inf (i32x4.splat (i32.const 0x100)))
        (local.set $nan16 (i16x8.splat (i32.const 0x7f)))))
    (local.set $s (f32x4.splat (local.get $sf)))
    (local.set $o (i8x16.shuffle 2 3 6 7 10 11 14 15 18 19 22 23 26 27 30 31
      (call $bf16hi (call $fp8_any (i32x4.extend_low_i16x8_u (local.get $h)) (local.get $shift) (local.get $mult) (local.get $s) (local.get $nan) (local.get $inf) (local.get $keep)))
      (call $bf16hi (call $fp8_any (i32x4.extend_high_i16x8_u (local.get $h)) (local.get $shift) (local.get $mult) (local.get $s) (local.get $nan) (local.get $inf) (local.get $keep)))))
    (global.set $fp8_nan (i32.add (global.get $fp8_nan)
      (i32.popcnt (i16x8.bitmask (i16x8.ge_u (v128.and (local.get $h) (i16x8.splat (i32.const 0x7f))) (local.get $nan16))))))
    (global.set $fp8_bad (i32.add (global.get $fp8_bad)
      (i32.popcnt (i16x8.bitmask (i16x8.eq (v128.and (local.get $o) (i16x8.splat (i32.const 0x7f80))) (i16x8.splat (i32.const 0x7f80)))))))
    (local.get $o))

  ;; The tables of $n scales (f32 at $scales): 64 bytes each at $dst (V's low bytes, V's high
  ;; bytes, W's low bytes, W's high bytes) and one byte each at $flags, 1 where the lookup is
  ;; exact for every finite code: |s| · max below bf16's overflow threshold, |s| · 2^-bias normal.
  (func (export "fp8_tables") (param $scales i32) (param $n i32) (param $fmt i32) (param $dst i32) (param $flags i32)
    (local $i i32) (local $sf f32) (local $o0 v128) (local $o1 v128) (local $nan0 i32) (local $bad0 i32) (local $sub v128) (local $max f32) (local $tiny f32)
    (local.set $nan0 (global.get $fp8_nan))
    (local.set $bad0 (global.get $fp8_bad))
    (if (local.get $fmt)
      (then (local.set $sub (i16x8.splat (i32.const 0x200))) (local.set $max (f32.const 57344)) (local.set $tiny (f32.const 0x1p-15)))
      (else (local.set $sub (i16x8.splat (i32.const 0x100))) (local.set $max (f32.const 448)) (local.set $tiny (f32.const 0x1p-7))))
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $sf (f32.load (i32.add (local.get $scales) (i32.shl (local.get $i) (i32.const 2)))))
      ;; V: codes 16 … 31 (one step up in the higher exponent bits), stepped back down
      (local.set $o0 (i16x8.sub (call $fp8_bf16x8 (v128.const i16x8 16 17 18 19 20 21 22 23) (local.get $sf) (local.get $fmt)) (local.get $sub)))
      (local.set $o1 (i16x8.sub (call $fp8_bf16x8 (v128.const i16x8 24 25 26 27 28 29 30 31) (local.get $sf) (local.get $fmt)) (local.get $sub)))
      (v128.store (local.get $dst) (i8x16.shuffle 0 2 4 6 8 10 12 14 16 18 20 22 24 26 28 30 (local.get $o0) (local.get $o1)))
      (v128.store offset=16 (local.get $dst) (i8x16.shuffle 1 3 5 7 9 11 13 15 17 19 21 23 25 27 29 31 (local.get $o0) (local.get $o1)))
      ;; W: codes 0 … 15 as they are
      (local.set $o0 (call $fp8_bf16x8 (v128.const i16x8 0 1 2 3 4 5 6 7) (local.get $sf) (local.get $fmt)))
      (local.set $o1 (call $fp8_bf16x8 (v128.const i16x8 8 9 10 11 12 13 14 15) (local.get $sf) (local.get $fmt)))
      (v128.store offset=32 (local.get $dst) (i8x16.shuffle 0 2 4 6 8 10 12 14 16 18 20 22 24 26 28 30 (local.get $o0) (local.get $o1)))
      (v128.store offset=48 (local.get $dst) (i8x16.shuffle 1 3 5 7 9 11 13 15 17 19 21 23 25 27 29 31 (local.get $o0) (local.get $o1)))
      (i32.store8 (i32.add (local.get $flags) (local.get $i))
        (i32.and
          (f32.lt (f32.mul (f32.abs (local.get $sf)) (local.get $max)) (f32.reinterpret_i32 (i32.const 0x7f7f8000)))
          (f32.ge (f32.mul (f32.abs (local.get $sf)) (local.get $tiny)) (f32.const 0x1p-126))))
      (local.set $dst (i32.add (local.get $dst) (i32.const 64)))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l)))
    ;; making the tables counts nothing
    (global.set $fp8_nan (local.get $nan0))
    (global.set $fp8_bad (local.get $bad0)))

  ;; The lookup constants of $fmt, in globals (read into locals once per call).
  (global $g7f (mut v128) (v128.const i32x4 0 0 0 0))
  (global $g0f (mut v128) (v128.const i32x4 0 0 0 0))
  (global $g80 (mut v128) (v128.const i32x4 0 0 0 0))
  (global $g16 (mut v128) (v128.const i32x4 0 0 0 0))
  (global $gspec (mut v128) (v128.const i32x4 0 0 0 0))
  (global $ghmask (mut v128) (v128.const i32x4 0 0 0 0))
  (global $ghsh (mut i32) (i32.const 0))
  (func $lookup_consts (param $fmt i32)
    (global.set $g7f (i8x16.splat (i32.const 0x7f)))
    (global.set $g0f (i8x16.splat (i32.const 0x0f)))
    (global.set $g80 (i8x16.splat (i32.const 0x80)))
    (global.set $g16 (i8x16.splat (i32.const 16)))
    ;; the codes the tables do not serve: E4M3's NaN (0x7f); E5M2's ±Inf and NaNs (≥ 0x7c)
    (global.set $gspec (i8x16.splat (select (i32.const 0x7c) (i32.const 0x7f) (local.get $fmt))))
    ;; the higher exponent bits, as a count to add to the result's high byte
    (global.set $ghmask (i8x16.splat (select (i32.const 0x0e) (i32.const 0x07) (local.get $fmt))))
    (global.set $ghsh (select (i32.const 3) (i32.const 4) (local.get $fmt))))

  ;; Dequantizes columns $cc … $c1 − 1 (multiples of 16) of a [$rows, $cols] FP8 matrix at $src
  ;; ($rows a multiple of 8) into bf16 at $dst, transposed: [$c1 − $cc, $rows]. One pass: 8 rows
  ;; × 16 columns are looked up into registers and written out by two 8×8 transposes of 16-bit
  ;; lanes (transpose16's interleaves). Scales, tables and flags (fp8_tables) are laid out
  ;; [ceil(rows / $bR), $nC], $bR a multiple of 8 and $bC of 16, so a tile lies in one block.
  ;; Returns the count of ±Inf/NaN results; NaN codes are added to $fp8_nan.
  (func (export "fp8_bf16_t")
    (param $src i32) (param $dst i32) (param $rows i32) (param $cols i32) (param $cc i32) (param $c1 i32)
    (param $scales i32) (param $tables i32) (param $flags i32) (param $nC i32) (param $bR i32) (param $bC i32) (param $fmt i32)
    (result i32)
    (local $bad0 i32) (local $t i32)
    (local $c0 i32) (local $r i32) (local $sp i32) (local $p i32) (local $dp i32) (local $ds i32) (local $blk i32) (local $ok i32) (local $sf f32) (local $hsh i32)
    (local $c v128) (local $a v128) (local $ix v128) (local $lo v128) (local $hi v128) (local $vlo v128) (local $vhi v128) (local $wlo v128) (local $whi v128) (local $k7f v128) (local $k0f v128) (local $k80 v128) (local $k16 v128) (local $spec v128) (local $hmask v128) (local $x0 v128) (local $x1 v128) (local $x2 v128) (local $x3 v128) (local $x4 v128) (local $x5 v128) (local $x6 v128) (local $x7 v128) (local $y0 v128) (local $y1 v128) (local $y2 v128) (local $y3 v128) (local $y4 v128) (local $y5 v128) (local $y6 v128) (local $y7 v128) (local $t0 v128) (local $t1 v128) (local $t2 v128) (local $t3 v128) (local $t4 v128) (local $t5 v128) (local $t6 v128) (local $t7 v128) (local $u0 v128) (local $u1 v128) (local $u2 v128) (local $u3 v128) (local $u4 v128) (local $u5 v128) (local $u6 v128) (local $u7 v128)
    (local.set $bad0 (global.get $fp8_bad))
    (call $lookup_consts (local.get $fmt))
    (local.set $k7f (global.get $g7f)) (local.set $k0f (global.get $g0f)) (local.set $k80 (global.get $g80)) (local.set $k16 (global.get $g16))
    (local.set $spec (global.get $gspec)) (local.set $hmask (global.get $ghmask)) (local.set $hsh (global.get $ghsh))
    (local.set $ds (i32.shl (local.get $rows) (i32.const 1)))
    (local.set $c0 (local.get $cc))
    (block $cdone (loop $lc
      (br_if $cdone (i32.ge_u (local.get $cc) (local.get $c1)))
      (local.set $r (i32.const 0))
      (block $rdone (loop $lr
        (br_if $rdone (i32.ge_u (local.get $r) (local.get $rows)))
        (local.set $blk (i32.add (i32.mul (i32.div_u (local.get $r) (local.get $bR)) (local.get $nC)) (i32.div_u (local.get $cc) (local.get $bC))))
        (local.set $t (i32.add (local.get $tables) (i32.shl (local.get $blk) (i32.const 6))))
        (local.set $vlo (v128.load (local.get $t)))
        (local.set $vhi (v128.load offset=16 (local.get $t)))
        (local.set $wlo (v128.load offset=32 (local.get $t)))
        (local.set $whi (v128.load offset=48 (local.get $t)))
        (local.set $ok (i32.load8_u (i32.add (local.get $flags) (local.get $blk))))
        (local.set $sf (f32.load (i32.add (local.get $scales) (i32.shl (local.get $blk) (i32.const 2)))))
        (local.set $sp (i32.add (local.get $src) (i32.add (i32.mul (local.get $r) (local.get $cols)) (local.get $cc))))
        ;; row 0
        (local.set $c (v128.load (local.tee $p (local.get $sp))))
        (local.set $a (v128.and (local.get $c) (local.get $k7f)))
        (if (i32.and (local.get $ok) (i32.eqz (v128.any_true (i8x16.ge_u (local.get $a) (local.get $spec)))))
          (then
            (local.set $ix (v128.or (v128.and (local.get $c) (local.get $k0f)) (i8x16.lt_u (local.get $a) (local.get $k16))))
            (local.set $lo (v128.or (i8x16.swizzle (local.get $vlo) (local.get $ix)) (i8x16.swizzle (local.get $wlo) (local.get $a))))
            (local.set $hi (v128.xor
              (v128.or
                (i8x16.add (i8x16.swizzle (local.get $vhi) (local.get $ix)) (v128.and (i8x16.shr_u (local.get $c) (local.get $hsh)) (local.get $hmask)))
                (i8x16.swizzle (local.get $whi) (local.get $a)))
              (v128.and (local.get $c) (local.get $k80))))
            (local.set $x0 (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
            (local.set $y0 (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi))))
          (else
            (local.set $x0 (call $fp8_bf16x8 (v128.load8x8_u (local.get $p)) (local.get $sf) (local.get $fmt)))
            (local.set $y0 (call $fp8_bf16x8 (v128.load8x8_u offset=8 (local.get $p)) (local.get $sf) (local.get $fmt)))))
        ;; row 1
        (local.set $c (v128.load (local.tee $p (i32.add (local.get $p) (local.get $cols)))))
        (local.set $a (v128.and (local.get $c) (local.get $k7f)))
        (if (i32.and (local.get $ok) (i32.eqz (v128.any_true (i8x16.ge_u (local.get $a) (local.get $spec)))))
          (then
            (local.set $ix (v128.or (v128.and (local.get $c) (local.get $k0f)) (i8x16.lt_u (local.get $a) (local.get $k16))))
            (local.set $lo (v128.or (i8x16.swizzle (local.get $vlo) (local.get $ix)) (i8x16.swizzle (local.get $wlo) (local.get $a))))
            (local.set $hi (v128.xor
              (v128.or
                (i8x16.add (i8x16.swizzle (local.get $vhi) (local.get $ix)) (v128.and (i8x16.shr_u (local.get $c) (local.get $hsh)) (local.get $hmask)))
                (i8x16.swizzle (local.get $whi) (local.get $a)))
              (v128.and (local.get $c) (local.get $k80))))
            (local.set $x1 (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
            (local.set $y1 (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi))))
          (else
            (local.set $x1 (call $fp8_bf16x8 (v128.load8x8_u (local.get $p)) (local.get $sf) (local.get $fmt)))
            (local.set $y1 (call $fp8_bf16x8 (v128.load8x8_u offset=8 (local.get $p)) (local.get $sf) (local.get $fmt)))))
        ;; row 2
        (local.set $c (v128.load (local.tee $p (i32.add (local.get $p) (local.get $cols)))))
        (local.set $a (v128.and (local.get $c) (local.get $k7f)))
        (if (i32.and (local.get $ok) (i32.eqz (v128.any_true (i8x16.ge_u (local.get $a) (local.get $spec)))))
          (then
            (local.set $ix (v128.or (v128.and (local.get $c) (local.get $k0f)) (i8x16.lt_u (local.get $a) (local.get $k16))))
            (local.set $lo (v128.or (i8x16.swizzle (local.get $vlo) (local.get $ix)) (i8x16.swizzle (local.get $wlo) (local.get $a))))
            (local.set $hi (v128.xor
              (v128.or
                (i8x16.add (i8x16.swizzle (local.get $vhi) (local.get $ix)) (v128.and (i8x16.shr_u (local.get $c) (local.get $hsh)) (local.get $hmask)))
                (i8x16.swizzle (local.get $whi) (local.get $a)))
              (v128.and (local.get $c) (local.get $k80))))
            (local.set $x2 (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
            (local.set $y2 (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi))))
          (else
            (local.set $x2 (call $fp8_bf16x8 (v128.load8x8_u (local.get $p)) (local.get $sf) (local.get $fmt)))
            (local.set $y2 (call $fp8_bf16x8 (v128.load8x8_u offset=8 (local.get $p)) (local.get $sf) (local.get $fmt)))))
        ;; row 3
        (local.set $c (v128.load (local.tee $p (i32.add (local.get $p) (local.get $cols)))))
        (local.set $a (v128.and (local.get $c) (local.get $k7f)))
        (if (i32.and (local.get $ok) (i32.eqz (v128.any_true (i8x16.ge_u (local.get $a) (local.get $spec)))))
          (then
            (local.set $ix (v128.or (v128.and (local.get $c) (local.get $k0f)) (i8x16.lt_u (local.get $a) (local.get $k16))))
            (local.set $lo (v128.or (i8x16.swizzle (local.get $vlo) (local.get $ix)) (i8x16.swizzle (local.get $wlo) (local.get $a))))
            (local.set $hi (v128.xor
              (v128.or
                (i8x16.add (i8x16.swizzle (local.get $vhi) (local.get $ix)) (v128.and (i8x16.shr_u (local.get $c) (local.get $hsh)) (local.get $hmask)))
                (i8x16.swizzle (local.get $whi) (local.get $a)))
              (v128.and (local.get $c) (local.get $k80))))
            (local.set $x3 (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
            (local.set $y3 (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi))))
          (else
            (local.set $x3 (call $fp8_bf16x8 (v128.load8x8_u (local.get $p)) (local.get $sf) (local.get $fmt)))
            (local.set $y3 (call $fp8_bf16x8 (v128.load8x8_u offset=8 (local.get $p)) (local.get $sf) (local.get $fmt)))))
        ;; row 4
        (local.set $c (v128.load (local.tee $p (i32.add (local.get $p) (local.get $cols)))))
        (local.set $a (v128.and (local.get $c) (local.get $k7f)))
        (if (i32.and (local.get $ok) (i32.eqz (v128.any_true (i8x16.ge_u (local.get $a) (local.get $spec)))))
          (then
            (local.set $ix (v128.or (v128.and (local.get $c) (local.get $k0f)) (i8x16.lt_u (local.get $a) (local.get $k16))))
            (local.set $lo (v128.or (i8x16.swizzle (local.get $vlo) (local.get $ix)) (i8x16.swizzle (local.get $wlo) (local.get $a))))
            (local.set $hi (v128.xor
              (v128.or
                (i8x16.add (i8x16.swizzle (local.get $vhi) (local.get $ix)) (v128.and (i8x16.shr_u (local.get $c) (local.get $hsh)) (local.get $hmask)))
                (i8x16.swizzle (local.get $whi) (local.get $a)))
              (v128.and (local.get $c) (local.get $k80))))
            (local.set $x4 (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
            (local.set $y4 (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi))))
          (else
            (local.set $x4 (call $fp8_bf16x8 (v128.load8x8_u (local.get $p)) (local.get $sf) (local.get $fmt)))
            (local.set $y4 (call $fp8_bf16x8 (v128.load8x8_u offset=8 (local.get $p)) (local.get $sf) (local.get $fmt)))))
        ;; row 5
        (local.set $c (v128.load (local.tee $p (i32.add (local.get $p) (local.get $cols)))))
        (local.set $a (v128.and (local.get $c) (local.get $k7f)))
        (if (i32.and (local.get $ok) (i32.eqz (v128.any_true (i8x16.ge_u (local.get $a) (local.get $spec)))))
          (then
            (local.set $ix (v128.or (v128.and (local.get $c) (local.get $k0f)) (i8x16.lt_u (local.get $a) (local.get $k16))))
            (local.set $lo (v128.or (i8x16.swizzle (local.get $vlo) (local.get $ix)) (i8x16.swizzle (local.get $wlo) (local.get $a))))
            (local.set $hi (v128.xor
              (v128.or
                (i8x16.add (i8x16.swizzle (local.get $vhi) (local.get $ix)) (v128.and (i8x16.shr_u (local.get $c) (local.get $hsh)) (local.get $hmask)))
                (i8x16.swizzle (local.get $whi) (local.get $a)))
              (v128.and (local.get $c) (local.get $k80))))
            (local.set $x5 (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
            (local.set $y5 (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi))))
          (else
            (local.set $x5 (call $fp8_bf16x8 (v128.load8x8_u (local.get $p)) (local.get $sf) (local.get $fmt)))
            (local.set $y5 (call $fp8_bf16x8 (v128.load8x8_u offset=8 (local.get $p)) (local.get $sf) (local.get $fmt)))))
        ;; row 6
        (local.set $c (v128.load (local.tee $p (i32.add (local.get $p) (local.get $cols)))))
        (local.set $a (v128.and (local.get $c) (local.get $k7f)))
        (if (i32.and (local.get $ok) (i32.eqz (v128.any_true (i8x16.ge_u (local.get $a) (local.get $spec)))))
          (then
            (local.set $ix (v128.or (v128.and (local.get $c) (local.get $k0f)) (i8x16.lt_u (local.get $a) (local.get $k16))))
            (local.set $lo (v128.or (i8x16.swizzle (local.get $vlo) (local.get $ix)) (i8x16.swizzle (local.get $wlo) (local.get $a))))
            (local.set $hi (v128.xor
              (v128.or
                (i8x16.add (i8x16.swizzle (local.get $vhi) (local.get $ix)) (v128.and (i8x16.shr_u (local.get $c) (local.get $hsh)) (local.get $hmask)))
                (i8x16.swizzle (local.get $whi) (local.get $a)))
              (v128.and (local.get $c) (local.get $k80))))
            (local.set $x6 (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
            (local.set $y6 (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi))))
          (else
            (local.set $x6 (call $fp8_bf16x8 (v128.load8x8_u (local.get $p)) (local.get $sf) (local.get $fmt)))
            (local.set $y6 (call $fp8_bf16x8 (v128.load8x8_u offset=8 (local.get $p)) (local.get $sf) (local.get $fmt)))))
        ;; row 7
        (local.set $c (v128.load (local.tee $p (i32.add (local.get $p) (local.get $cols)))))
        (local.set $a (v128.and (local.get $c) (local.get $k7f)))
        (if (i32.and (local.get $ok) (i32.eqz (v128.any_true (i8x16.ge_u (local.get $a) (local.get $spec)))))
          (then
            (local.set $ix (v128.or (v128.and (local.get $c) (local.get $k0f)) (i8x16.lt_u (local.get $a) (local.get $k16))))
            (local.set $lo (v128.or (i8x16.swizzle (local.get $vlo) (local.get $ix)) (i8x16.swizzle (local.get $wlo) (local.get $a))))
            (local.set $hi (v128.xor
              (v128.or
                (i8x16.add (i8x16.swizzle (local.get $vhi) (local.get $ix)) (v128.and (i8x16.shr_u (local.get $c) (local.get $hsh)) (local.get $hmask)))
                (i8x16.swizzle (local.get $whi) (local.get $a)))
              (v128.and (local.get $c) (local.get $k80))))
            (local.set $x7 (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
            (local.set $y7 (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi))))
          (else
            (local.set $x7 (call $fp8_bf16x8 (v128.load8x8_u (local.get $p)) (local.get $sf) (local.get $fmt)))
            (local.set $y7 (call $fp8_bf16x8 (v128.load8x8_u offset=8 (local.get $p)) (local.get $sf) (local.get $fmt)))))
        (local.set $t0 (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $x0) (local.get $x1)))
        (local.set $t1 (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $x0) (local.get $x1)))
        (local.set $t2 (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $x2) (local.get $x3)))
        (local.set $t3 (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $x2) (local.get $x3)))
        (local.set $t4 (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $x4) (local.get $x5)))
        (local.set $t5 (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $x4) (local.get $x5)))
        (local.set $t6 (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $x6) (local.get $x7)))
        (local.set $t7 (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $x6) (local.get $x7)))
        (local.set $u0 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $t0) (local.get $t2)))
        (local.set $u1 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $t0) (local.get $t2)))
        (local.set $u2 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $t1) (local.get $t3)))
        (local.set $u3 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $t1) (local.get $t3)))
        (local.set $u4 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $t4) (local.get $t6)))
        (local.set $u5 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $t4) (local.get $t6)))
        (local.set $u6 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $t5) (local.get $t7)))
        (local.set $u7 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $t5) (local.get $t7)))
        (v128.store (local.tee $dp (i32.add (local.get $dst) (i32.add (i32.mul (i32.sub (local.get $cc) (local.get $c0)) (local.get $ds)) (i32.shl (local.get $r) (i32.const 1))))) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $u0) (local.get $u4)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $u0) (local.get $u4)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $u1) (local.get $u5)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $u1) (local.get $u5)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $u2) (local.get $u6)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $u2) (local.get $u6)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $u3) (local.get $u7)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $u3) (local.get $u7)))
        (local.set $dp (i32.add (local.get $dp) (local.get $ds)))
        (local.set $t0 (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $y0) (local.get $y1)))
        (local.set $t1 (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $y0) (local.get $y1)))
        (local.set $t2 (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $y2) (local.get $y3)))
        (local.set $t3 (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $y2) (local.get $y3)))
        (local.set $t4 (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $y4) (local.get $y5)))
        (local.set $t5 (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $y4) (local.get $y5)))
        (local.set $t6 (i8x16.shuffle 0 1 16 17 2 3 18 19 4 5 20 21 6 7 22 23 (local.get $y6) (local.get $y7)))
        (local.set $t7 (i8x16.shuffle 8 9 24 25 10 11 26 27 12 13 28 29 14 15 30 31 (local.get $y6) (local.get $y7)))
        (local.set $u0 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $t0) (local.get $t2)))
        (local.set $u1 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $t0) (local.get $t2)))
        (local.set $u2 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $t1) (local.get $t3)))
        (local.set $u3 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $t1) (local.get $t3)))
        (local.set $u4 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $t4) (local.get $t6)))
        (local.set $u5 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $t4) (local.get $t6)))
        (local.set $u6 (i8x16.shuffle 0 1 2 3 16 17 18 19 4 5 6 7 20 21 22 23 (local.get $t5) (local.get $t7)))
        (local.set $u7 (i8x16.shuffle 8 9 10 11 24 25 26 27 12 13 14 15 28 29 30 31 (local.get $t5) (local.get $t7)))
        (v128.store (local.get $dp) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $u0) (local.get $u4)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $u0) (local.get $u4)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $u1) (local.get $u5)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $u1) (local.get $u5)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $u2) (local.get $u6)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $u2) (local.get $u6)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 0 1 2 3 4 5 6 7 16 17 18 19 20 21 22 23 (local.get $u3) (local.get $u7)))
        (v128.store (local.tee $dp (i32.add (local.get $dp) (local.get $ds))) (i8x16.shuffle 8 9 10 11 12 13 14 15 24 25 26 27 28 29 30 31 (local.get $u3) (local.get $u7)))

        (local.set $r (i32.add (local.get $r) (i32.const 8)))
        (br $lr)))
      (local.set $cc (i32.add (local.get $cc) (i32.const 16)))
      (br $lc)))
    (i32.sub (global.get $fp8_bad) (local.get $bad0)))

  ;; fp8_dequant into bf16 (its arguments, $to implied) by the tables: $tables and $flags are
  ;; the row's (fp8_tables of the row's scales). Whole groups of 16 codes of a block go through
  ;; the lookup; the rest of each block's run, and blocks the tables do not serve, through
  ;; fp8_dequant.
  (func (export "fp8_bf16_rows")
    (param $src i32) (param $dst i32) (param $n i32) (param $scales i32) (param $tables i32) (param $flags i32) (param $bC i32) (param $col i32) (param $fmt i32)
    (result i32)
    (local $bad0 i32) (local $cnt i32) (local $end i32) (local $runEnd i32) (local $runStart i32) (local $blk i32) (local $t i32) (local $sf f32) (local $ok i32) (local $hsh i32)
    (local $c v128) (local $a v128) (local $ix v128) (local $lo v128) (local $hi v128) (local $vlo v128) (local $vhi v128) (local $wlo v128) (local $whi v128)
    (local $k7f v128) (local $k0f v128) (local $k80 v128) (local $k16 v128) (local $spec v128) (local $hmask v128) (local $x0 v128) (local $y0 v128)
    (local.set $bad0 (global.get $fp8_bad))
    (call $lookup_consts (local.get $fmt))
    (local.set $k7f (global.get $g7f)) (local.set $k0f (global.get $g0f)) (local.set $k80 (global.get $g80)) (local.set $k16 (global.get $g16))
    (local.set $spec (global.get $gspec)) (local.set $hmask (global.get $ghmask)) (local.set $hsh (global.get $ghsh))
    (local.set $end (i32.add (local.get $src) (local.get $n)))
    (local.set $blk (i32.div_u (local.get $col) (local.get $bC)))
    (block $done (loop $runs
      (br_if $done (i32.ge_u (local.get $src) (local.get $end)))
      (local.set $runEnd (i32.add (local.get $src)
        (i32.sub (i32.mul (i32.add (local.get $blk) (i32.const 1)) (local.get $bC)) (local.get $col))))
      (if (i32.gt_u (local.get $runEnd) (local.get $end)) (then (local.set $runEnd (local.get $end))))
      (local.set $ok (i32.load8_u (i32.add (local.get $flags) (local.get $blk))))
      (if (local.get $ok)
        (then
          (local.set $t (i32.add (local.get $tables) (i32.shl (local.get $blk) (i32.const 6))))
          (local.set $vlo (v128.load (local.get $t)))
          (local.set $vhi (v128.load offset=16 (local.get $t)))
          (local.set $wlo (v128.load offset=32 (local.get $t)))
          (local.set $whi (v128.load offset=48 (local.get $t)))
          (local.set $sf (f32.load (i32.add (local.get $scales) (i32.shl (local.get $blk) (i32.const 2)))))
          ;; two groups of 16 per turn, then one
          (local.set $runStart (local.get $src))
          (block $vdone (loop $v
            (br_if $vdone (i32.gt_u (i32.add (local.get $src) (i32.const 32)) (local.get $runEnd)))
            (local.set $c (v128.load (local.get $src)))
            (local.set $a (v128.and (local.get $c) (local.get $k7f)))
            (if (i32.eqz (v128.any_true (i8x16.ge_u (local.get $a) (local.get $spec))))
              (then
                (local.set $ix (v128.or (v128.and (local.get $c) (local.get $k0f)) (i8x16.lt_u (local.get $a) (local.get $k16))))
                (local.set $lo (v128.or (i8x16.swizzle (local.get $vlo) (local.get $ix)) (i8x16.swizzle (local.get $wlo) (local.get $a))))
                (local.set $hi (v128.xor
                  (v128.or
                    (i8x16.add (i8x16.swizzle (local.get $vhi) (local.get $ix)) (v128.and (i8x16.shr_u (local.get $c) (local.get $hsh)) (local.get $hmask)))
                    (i8x16.swizzle (local.get $whi) (local.get $a)))
                  (v128.and (local.get $c) (local.get $k80))))
                (local.set $x0 (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
                (local.set $y0 (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi))))
              (else
                (local.set $x0 (call $fp8_bf16x8 (v128.load8x8_u (local.get $src)) (local.get $sf) (local.get $fmt)))
                (local.set $y0 (call $fp8_bf16x8 (v128.load8x8_u offset=8 (local.get $src)) (local.get $sf) (local.get $fmt)))))
    
            (v128.store (local.get $dst) (local.get $x0))
            (v128.store offset=16 (local.get $dst) (local.get $y0))
            (local.set $c (v128.load offset=16 (local.get $src)))
            (local.set $a (v128.and (local.get $c) (local.get $k7f)))
            (if (i32.eqz (v128.any_true (i8x16.ge_u (local.get $a) (local.get $spec))))
              (then
                (local.set $ix (v128.or (v128.and (local.get $c) (local.get $k0f)) (i8x16.lt_u (local.get $a) (local.get $k16))))
                (local.set $lo (v128.or (i8x16.swizzle (local.get $vlo) (local.get $ix)) (i8x16.swizzle (local.get $wlo) (local.get $a))))
                (local.set $hi (v128.xor
                  (v128.or
                    (i8x16.add (i8x16.swizzle (local.get $vhi) (local.get $ix)) (v128.and (i8x16.shr_u (local.get $c) (local.get $hsh)) (local.get $hmask)))
                    (i8x16.swizzle (local.get $whi) (local.get $a)))
                  (v128.and (local.get $c) (local.get $k80))))
                (local.set $x0 (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
                (local.set $y0 (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi))))
              (else
                (local.set $x0 (call $fp8_bf16x8 (v128.load8x8_u offset=16 (local.get $src)) (local.get $sf) (local.get $fmt)))
                (local.set $y0 (call $fp8_bf16x8 (v128.load8x8_u offset=24 (local.get $src)) (local.get $sf) (local.get $fmt)))))
    
            (v128.store offset=32 (local.get $dst) (local.get $x0))
            (v128.store offset=48 (local.get $dst) (local.get $y0))
            (local.set $src (i32.add (local.get $src) (i32.const 32)))
            (local.set $dst (i32.add (local.get $dst) (i32.const 64)))
            (br $v)))
          (if (i32.le_u (i32.add (local.get $src) (i32.const 16)) (local.get $runEnd))
            (then
            (local.set $c (v128.load (local.get $src)))
            (local.set $a (v128.and (local.get $c) (local.get $k7f)))
            (if (i32.eqz (v128.any_true (i8x16.ge_u (local.get $a) (local.get $spec))))
              (then
                (local.set $ix (v128.or (v128.and (local.get $c) (local.get $k0f)) (i8x16.lt_u (local.get $a) (local.get $k16))))
                (local.set $lo (v128.or (i8x16.swizzle (local.get $vlo) (local.get $ix)) (i8x16.swizzle (local.get $wlo) (local.get $a))))
                (local.set $hi (v128.xor
                  (v128.or
                    (i8x16.add (i8x16.swizzle (local.get $vhi) (local.get $ix)) (v128.and (i8x16.shr_u (local.get $c) (local.get $hsh)) (local.get $hmask)))
                    (i8x16.swizzle (local.get $whi) (local.get $a)))
                  (v128.and (local.get $c) (local.get $k80))))
                (local.set $x0 (i8x16.shuffle 0 16 1 17 2 18 3 19 4 20 5 21 6 22 7 23 (local.get $lo) (local.get $hi)))
                (local.set $y0 (i8x16.shuffle 8 24 9 25 10 26 11 27 12 28 13 29 14 30 15 31 (local.get $lo) (local.get $hi))))
              (else
                (local.set $x0 (call $fp8_bf16x8 (v128.load8x8_u (local.get $src)) (local.get $sf) (local.get $fmt)))
                (local.set $y0 (call $fp8_bf16x8 (v128.load8x8_u offset=8 (local.get $src)) (local.get $sf) (local.get $fmt)))))
    
            (v128.store (local.get $dst) (local.get $x0))
            (v128.store offset=16 (local.get $dst) (local.get $y0))
            (local.set $src (i32.add (local.get $src) (i32.const 16)))
            (local.set $dst (i32.add (local.get $dst) (i32.const 32)))))
          (local.set $col (i32.add (local.get $col) (i32.sub (local.get $src) (local.get $runStart))))))
      ;; the run's rest (or all of it): the exact kernel
      (if (i32.lt_u (local.get $src) (local.get $runEnd))
        (then
          (local.set $cnt (i32.add (local.get $cnt)
            (call $fp8_dequant (local.get $src) (local.get $dst) (i32.sub (local.get $runEnd) (local.get $src)) (local.get $scales) (local.get $bC) (local.get $col) (local.get $fmt) (i32.const 1))))
          (local.set $dst (i32.add (local.get $dst) (i32.shl (i32.sub (local.get $runEnd) (local.get $src)) (i32.const 1))))
          (local.set $col (i32.add (local.get $col) (i32.sub (local.get $runEnd) (local.get $src))))
          (local.set $src (local.get $runEnd))))
      (local.set $blk (i32.add (local.get $blk) (i32.const 1)))
      (br $runs)))
    (i32.add (local.get $cnt) (i32.sub (global.get $fp8_bad) (local.get $bad0))))

  ;; ---- FP8 → f16 or f32 by a table of 256 results per scale ----
  ;; f16's range is narrow: DeepSeek-style block scales (about 1e-4) put many products among f16's
  ;; subnormals, so bf16's exponent-shift tables do not apply, and fp8_dequant's arithmetic
  ;; rounding measured 2.3 ns per element. There are only 256 codes: a table per scale block
  ;; holds every code's result, made by the exact path ($fp8_any, then $half1 for f16: the slow
  ;; vectors of fp8_dequant, tested bit for bit), so a lookup is exact by construction. 256
  ;; products per block of 16,384 elements (128 × 128) cost under 2 % of the lookups.

  ;; The tables of $n scales (f32 at $scales): 256 results each at $dst ($to: 0 f32, 2 f16), and
  ;; one byte each at $flags, 1 where no finite code's result overflows the target (always for
  ;; f32): there a result is ±Inf or NaN exactly when its code is a NaN or Inf code.
  (func (export "fp8_luts") (param $scales i32) (param $n i32) (param $fmt i32) (param $to i32) (param $dst i32) (param $flags i32)
    (local $i i32) (local $c i32) (local $sf f32) (local $s v128) (local $r0 v128) (local $r1 v128) (local $max f32)
    (local $shift i32) (local $mult v128) (local $nan v128) (local $inf v128) (local $keep v128)
    (if (local.get $fmt)
      (then
        (local.set $shift (i32.const 21))
        (local.set $mult (i32x4.splat (i32.const 0x77800000)))
        (local.set $nan (i32x4.splat (i32.const 0x7d)))
        (local.set $inf (i32x4.splat (i32.const 0x7c)))
        (local.set $keep (i32x4.splat (i32.const 0x80600000)))
        (local.set $max (f32.const 57344)))
      (else
        (local.set $shift (i32.const 20))
        (local.set $mult (i32x4.splat (i32.const 0x7b800000)))
        (local.set $nan (i32x4.splat (i32.const 0x7f)))
        (local.set $inf (i32x4.splat (i32.const 0x100)))
        (local.set $max (f32.const 448))))
    (block $done (loop $l
      (br_if $done (i32.ge_u (local.get $i) (local.get $n)))
      (local.set $sf (f32.load (i32.add (local.get $scales) (i32.shl (local.get $i) (i32.const 2)))))
      (local.set $s (f32x4.splat (local.get $sf)))
      (local.set $c (i32.const 0))
      (block $cdone (loop $lc
        (br_if $cdone (i32.ge_u (local.get $c) (i32.const 256)))
        (local.set $r0 (call $fp8_any (i32x4.add (i32x4.splat (local.get $c)) (v128.const i32x4 0 1 2 3))
          (local.get $shift) (local.get $mult) (local.get $s) (local.get $nan) (local.get $inf) (local.get $keep)))
        (local.set $r1 (call $fp8_any (i32x4.add (i32x4.splat (local.get $c)) (v128.const i32x4 4 5 6 7))
          (local.get $shift) (local.get $mult) (local.get $s) (local.get $nan) (local.get $inf) (local.get $keep)))
        (if (i32.eqz (local.get $to))
          (then
            (v128.store (local.get $dst) (local.get $r0))
            (v128.store offset=16 (local.get $dst) (local.get $r1))
            (local.set $dst (i32.add (local.get $dst) (i32.const 32))))
          (else
            (v128.store (local.get $dst) (i16x8.narrow_i32x4_u (call $half1 (local.get $r0)) (call $half1 (local.get $r1))))
            (local.set $dst (i32.add (local.get $dst) (i32.const 16)))))
        (local.set $c (i32.add (local.get $c) (i32.const 8)))
        (br $lc)))
      (i32.store8 (i32.add (local.get $flags) (local.get $i))
        (i32.or (i32.eqz (local.get $to)) (f32.lt (f32.mul (f32.abs (local.get $sf)) (local.get $max)) (f32.const 65520))))
      (local.set $i (i32.add (local.get $i) (i32.const 1)))
      (br $l))))

  ;; fp8_dequant into f32 or f16 (its arguments) by the tables: $luts and $flags are the row's
  ;; (fp8_luts of the row's scales). A block's run is counted (NaN codes, and for f16 the codes
  ;; whose results are not finite) 16 codes at a time, then looked up four codes per turn;
  ;; blocks whose flag is 0 go through fp8_dequant. Returns the count of ±Inf/NaN f16 results.
  (func (export "fp8_lut")
    (param $src i32) (param $dst i32) (param $n i32) (param $scales i32) (param $luts i32) (param $flags i32) (param $bC i32) (param $col i32) (param $fmt i32) (param $to i32)
    (result i32)
    (local $end i32) (local $runEnd i32) (local $blk i32) (local $lut i32) (local $cnt i32) (local $nans i32) (local $specs i32)
    (local $p i32) (local $w i32) (local $osh i32) (local $nanc i32) (local $specc i32) (local $b i32)
    (local $a v128) (local $k7f v128) (local $knan v128) (local $kspec v128)
    (local.set $osh (select (i32.const 2) (i32.const 1) (i32.eqz (local.get $to))))
    (local.set $nanc (select (i32.const 0x7d) (i32.const 0x7f) (local.get $fmt)))
    (local.set $specc (select (i32.const 0x7c) (i32.const 0x7f) (local.get $fmt)))
    (local.set $k7f (i8x16.splat (i32.const 0x7f)))
    (local.set $knan (i8x16.splat (local.get $nanc)))
    (local.set $kspec (i8x16.splat (local.get $specc)))
    (local.set $end (i32.add (local.get $src) (local.get $n)))
    (local.set $blk (i32.div_u (local.get $col) (local.get $bC)))
    (block $done (loop $runs
      (br_if $done (i32.ge_u (local.get $src) (local.get $end)))
      (local.set $runEnd (i32.add (local.get $src)
        (i32.sub (i32.mul (i32.add (local.get $blk) (i32.const 1)) (local.get $bC)) (local.get $col))))
      (if (i32.gt_u (local.get $runEnd) (local.get $end)) (then (local.set $runEnd (local.get $end))))
      (local.set $col (i32.add (local.get $col) (i32.sub (local.get $runEnd) (local.get $src))))
      (if (i32.load8_u (i32.add (local.get $flags) (local.get $blk)))
        (then
          (local.set $lut (i32.add (local.get $luts) (i32.shl (local.get $blk) (i32.add (i32.const 8) (local.get $osh)))))
          ;; the counts, 16 codes at a time, then one
          (local.set $p (local.get $src))
          (block $vdone (loop $v
            (br_if $vdone (i32.gt_u (i32.add (local.get $p) (i32.const 16)) (local.get $runEnd)))
            (local.set $a (v128.and (v128.load (local.get $p)) (local.get $k7f)))
            (local.set $nans (i32.add (local.get $nans) (i32.popcnt (i8x16.bitmask (i8x16.ge_u (local.get $a) (local.get $knan))))))
            (local.set $specs (i32.add (local.get $specs) (i32.popcnt (i8x16.bitmask (i8x16.ge_u (local.get $a) (local.get $kspec))))))
            (local.set $p (i32.add (local.get $p) (i32.const 16)))
            (br $v)))
          (block $tdone (loop $t
            (br_if $tdone (i32.ge_u (local.get $p) (local.get $runEnd)))
            (local.set $b (i32.and (i32.load8_u (local.get $p)) (i32.const 0x7f)))
            (local.set $nans (i32.add (local.get $nans) (i32.ge_u (local.get $b) (local.get $nanc))))
            (local.set $specs (i32.add (local.get $specs) (i32.ge_u (local.get $b) (local.get $specc))))
            (local.set $p (i32.add (local.get $p) (i32.const 1)))
            (br $t)))
          ;; the lookups: four codes per load
          (if (local.get $to)
            (then
              (block $hdone (loop $h
                (br_if $hdone (i32.gt_u (i32.add (local.get $src) (i32.const 4)) (local.get $runEnd)))
                (local.set $w (i32.load (local.get $src)))
                (i32.store16 (local.get $dst) (i32.load16_u (i32.add (local.get $lut) (i32.shl (i32.and (local.get $w) (i32.const 0xff)) (i32.const 1)))))
                (i32.store16 offset=2 (local.get $dst) (i32.load16_u (i32.add (local.get $lut) (i32.and (i32.shr_u (local.get $w) (i32.const 7)) (i32.const 0x1fe)))))
                (i32.store16 offset=4 (local.get $dst) (i32.load16_u (i32.add (local.get $lut) (i32.and (i32.shr_u (local.get $w) (i32.const 15)) (i32.const 0x1fe)))))
                (i32.store16 offset=6 (local.get $dst) (i32.load16_u (i32.add (local.get $lut) (i32.shl (i32.shr_u (local.get $w) (i32.const 24)) (i32.const 1)))))
                (local.set $src (i32.add (local.get $src) (i32.const 4)))
                (local.set $dst (i32.add (local.get $dst) (i32.const 8)))
                (br $h)))
              (block $h1done (loop $h1
                (br_if $h1done (i32.ge_u (local.get $src) (local.get $runEnd)))
                (i32.store16 (local.get $dst) (i32.load16_u (i32.add (local.get $lut) (i32.shl (i32.load8_u (local.get $src)) (i32.const 1)))))
                (local.set $src (i32.add (local.get $src) (i32.const 1)))
                (local.set $dst (i32.add (local.get $dst) (i32.const 2)))
                (br $h1))))
            (else
              (block $fdone (loop $f
                (br_if $fdone (i32.gt_u (i32.add (local.get $src) (i32.const 4)) (local.get $runEnd)))
                (local.set $w (i32.load (local.get $src)))
                (i32.store (local.get $dst) (i32.load (i32.add (local.get $lut) (i32.shl (i32.and (local.get $w) (i32.const 0xff)) (i32.const 2)))))
                (i32.store offset=4 (local.get $dst) (i32.load (i32.add (local.get $lut) (i32.and (i32.shr_u (local.get $w) (i32.const 6)) (i32.const 0x3fc)))))
                (i32.store offset=8 (local.get $dst) (i32.load (i32.add (local.get $lut) (i32.and (i32.shr_u (local.get $w) (i32.const 14)) (i32.const 0x3fc)))))
                (i32.store offset=12 (local.get $dst) (i32.load (i32.add (local.get $lut) (i32.shl (i32.shr_u (local.get $w) (i32.const 24)) (i32.const 2)))))
                (local.set $src (i32.add (local.get $src) (i32.const 4)))
                (local.set $dst (i32.add (local.get $dst) (i32.const 16)))
                (br $f)))
              (block $f1done (loop $f1
                (br_if $f1done (i32.ge_u (local.get $src) (local.get $runEnd)))
                (i32.store (local.get $dst) (i32.load (i32.add (local.get $lut) (i32.shl (i32.load8_u (local.get $src)) (i32.const 2)))))
                (local.set $src (i32.add (local.get $src) (i32.const 1)))
                (local.set $dst (i32.add (local.get $dst) (i32.const 4)))
                (br $f1))))))
        (else
          ;; fp8_dequant of this run: it walks from $col's block, which is this one
          (local.set $cnt (i32.add (local.get $cnt)
            (call $fp8_dequant (local.get $src) (local.get $dst) (i32.sub (local.get $runEnd) (local.get $src)) (local.get $scales)
              (local.get $bC) (i32.sub (local.get $col) (i32.sub (local.get $runEnd) (local.get $src))) (local.get $fmt) (local.get $to))))
          (local.set $dst (i32.add (local.get $dst) (i32.shl (i32.sub (local.get $runEnd) (local.get $src)) (local.get $osh))))
          (local.set $src (local.get $runEnd))))
      (local.set $blk (i32.add (local.get $blk) (i32.const 1)))
      (br $runs)))
    (global.set $fp8_nan (i32.add (global.get $fp8_nan) (local.get $nans)))
    (i32.add (local.get $cnt) (select (local.get $specs) (i32.const 0) (local.get $to))))
)
