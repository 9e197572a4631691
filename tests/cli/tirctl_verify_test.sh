#!/bin/bash
# tirctl verify end to end, as a performance engineer uses it: emit GPU
# kernels, verify them lane by lane from the files on disk, then edit the
# generated .cu (drop a barrier, change lane arithmetic, miscount a wait) or
# the tile library beside it, and see verify catch each edit.
set -u
tirctl=client/tirctl
graphs=tests/cli/graphs
out="${TEST_TMPDIR:-$(mktemp -d)}/verify"
fail=0
check() {
  if [[ "$2" != "$3" ]]; then echo "FAIL: $1: expected '$2', got '$3'"; fail=1; else echo "ok: $1"; fi
}

# The sm_80 form (mma.sync, ldmatrix, cp.async).
mm="$out/mm"
"$tirctl" emit "$graphs/matmul_bf16_pipelined.mlir" --arch sm_80 -o "$mm" > emit.txt 2>&1
check "emit exit" 0 $?
check "emit wrote the kernel graph" 1 "$(ls "$mm" | grep -c '^mm_k0.mlir$')"
cu="$mm/mm_k0.cu"
check "the kernel takes the mma path" 1 "$(grep -c -m1 'tir_mma_m16n8k16_bf16' "$cu")"
check "the kernel has the cp.async pipeline" 1 "$(grep -c -m1 'tir_cp_async_wait<' "$cu")"
cp "$cu" "$out/mm_k0.orig"

"$tirctl" verify "$mm" > report.txt 2>&1
check "verify of the emitted kernel exit" 0 $?
check "verify runs lane by lane" 1 "$(grep -c 'the GPU form, emulated lane by lane' report.txt)"
check "verify reports the output ok" 1 "$(grep -c ' ok$' report.txt)"

# The barrier after the pipeline's wait removed: a race.
perl -0pi -e 's/(tir_cp_async_wait<\d+>\(\);\n)\s*TIR_SYNC\(\);\n/$1/' "$cu"
"$tirctl" verify "$mm" > report.txt 2>&1
check "dropped barrier fails" 1 $?
check "dropped barrier is a race" 1 "$(grep -c 'SHARED_MEMORY_RACE' report.txt)"
check "the race names two threads" 1 "$(grep -c 'thread ([0-9]*,0,0) reads shared byte [0-9]* that thread ([0-9]*,0,0) wrote' report.txt)"
cp "$out/mm_k0.orig" "$cu"

# A wrong ldmatrix lane address: a wrong result.
sed -i '0,/lane % 16,/s//lane % 8,/' "$cu"
"$tirctl" verify "$mm" > report.txt 2>&1
check "wrong lane address fails" 1 $?
check "wrong lane address is a wrong result" 1 "$(grep -c ' WRONG$' report.txt)"
cp "$out/mm_k0.orig" "$cu"

# cp.async.wait_group one too high: data read before it lands.
perl -0pi -e 's/tir_cp_async_wait<(\d+)>\(\);\n(\s*)TIR_SYNC/"tir_cp_async_wait<".($1+1).">();\n$2TIR_SYNC"/e' "$cu"
"$tirctl" verify "$mm" > report.txt 2>&1
check "wait one too high fails" 1 $?
check "wait one too high is an uncompleted copy" 1 "$(grep -c 'UNCOMPLETED_ASYNC_COPY' report.txt)"
cp "$out/mm_k0.orig" "$cu"

# The plain host form of the same files.
"$tirctl" verify "$mm" --arch host > report.txt 2>&1
check "verify --arch host exit" 0 $?
check "verify --arch host runs the plain form" 1 "$(grep -c 'the plain host form' report.txt)"

# A kernel that traps (SIGILL, as a kernel with a wrong index once did):
# verify runs it in a child process, as the worker does, and reports it;
# tirctl itself lives and says why.
perl -0pi -e 's/(TIR_KERNEL [^{;]*\{)/$1 __builtin_trap();/' "$cu"
check "the planted trap is in the kernel" 1 "$(grep -c -m1 '__builtin_trap();' "$cu")"
"$tirctl" verify "$mm" --arch host > report.txt 2>&1
check "a trapping kernel fails verify with exit 1 (not a signal)" 1 $?
check "... reported as KERNEL_CRASHED with its signal" 1 \
  "$(grep -c 'KERNEL_CRASHED: the kernel ended its process with signal 4' report.txt)"
cp "$out/mm_k0.orig" "$cu"

# The sm_90a form (wgmma, TMA, mbarriers): verified as emitted, then edited.
hm="$out/hopper"
"$tirctl" emit "$graphs/matmul_bf16_pipelined.mlir" --arch sm_90a -o "$hm" > emit.txt 2>&1
check "sm_90a emit exit" 0 $?
hcu="$hm/mm_k0.cu"
check "the sm_90a kernel issues wgmma" 1 "$(grep -c -m1 'tir_wgmma_m64k16_bf16<' "$hcu")"
check "the sm_90a kernel loads by TMA" 1 "$(grep -c -m1 'tir_tma_load_2d(As' "$hcu")"
check "emit wrote the PTX" 1 "$(grep -c -m1 'wgmma.mma_async' "$hm/mm_k0.sm_90a.ptx")"
cp "$hcu" "$out/hopper.orig"
"$tirctl" verify "$hm" > report.txt 2>&1
check "sm_90a verify exit" 0 $?
check "sm_90a verify reports the output ok" 1 "$(grep -c ' ok$' report.txt)"
# The consumers no longer wait for the stage's TMA copies.
perl -0pi -e 's/\n\s*tir_mbar_wait\(full \+ s, [^\n]*\n/\n/' "$hcu"
"$tirctl" verify "$hm" > report.txt 2>&1
check "no mbarrier wait fails" 1 $?
check "no mbarrier wait is an uncompleted copy" 1 "$(grep -c -m1 'UNCOMPLETED_ASYNC_COPY\|UNINITIALIZED_SHARED_READ' report.txt)"
cp "$out/hopper.orig" "$hcu"
# The epilogue reads the accumulators without wgmma.wait_group.
perl -0pi -e 's/\n\s*tir_wgmma_wait<0>\(\);\n/\n/' "$hcu"
"$tirctl" verify "$hm" > report.txt 2>&1
check "no wgmma wait fails" 1 $?
check "no wgmma wait is named" 1 "$(grep -c -m1 'WGMMA_NOT_WAITED' report.txt)"
cp "$out/hopper.orig" "$hcu"
"$tirctl" verify "$hm" --arch host > report.txt 2>&1
check "sm_90a kernel's plain host form exit" 0 $?
# Candidates whose tensor maps differ from the default's: a 128-row tile
# (one 64x128 box for A) and the TMA-store epilogue (an output map). verify
# takes the fields the directory's launch.json declares.
for cand in block_m=128 tma_store=1; do
  cd_="$out/hopper-$cand"
  "$tirctl" emit "$graphs/matmul_bf16_pipelined.mlir" --arch sm_90a --candidate "$cand" -o "$cd_" > emit.txt 2>&1
  check "sm_90a $cand emit exit" 0 $?
  "$tirctl" verify "$cd_" > report.txt 2>&1
  check "sm_90a $cand verify exit" 0 $?
  check "sm_90a $cand verify reports the output ok" 1 "$(grep -c ' ok$' report.txt)"
done
check "the tma_store kernel declares an output map" 1 "$(grep -c -m1 'tmapout0_' "$out/hopper-tma_store=1/mm_k0.launch.json")"
check "the block_m=128 kernel's A box has 128 rows" 1 "$(grep -c -m1 'tmap0_64x128' "$out/hopper-block_m=128/mm_k0.launch.json")"

# A reduction with several warps per row; the tile library's barrier between
# the warps' partials removed in the directory's tir_tiles.h.
sm="$out/softmax"
"$tirctl" emit "$graphs/softmax_fits.mlir" --arch sm_90a -o "$sm" > emit.txt 2>&1
check "softmax emit exit" 0 $?
"$tirctl" verify "$sm" > report.txt 2>&1
check "softmax verify exit" 0 $?
perl -0pi -e 's/(if \(t % 32 == 0\) scratch\[t \/ 32\] = v;\n)\s*TIR_SYNC\(\);\n/$1/' "$sm/tir_tiles.h"
"$tirctl" verify "$sm" > report.txt 2>&1
check "edited tile library fails" 1 $?
check "edited tile library is a race" 1 "$(grep -c -m1 'SHARED_MEMORY_RACE' report.txt)"

# A kernel that no longer compiles is reported, not a crash.
echo "this is not C++" >> "$cu"
"$tirctl" verify "$mm" > report.txt 2>&1
check "broken source fails" 1 $?
check "broken source is a compile error" 1 "$(grep -c -m1 'HOST_COMPILE_FAILED' report.txt)"

# Verification that would run for hours is refused at once, with the figures.
start=$(date +%s)
"$tirctl" emit "$graphs/matmul_4096.mlir" --arch sm_90a --verify -o "$out/big" > report.txt 2>&1
check "huge verification fails" 1 $?
check "huge verification reason" 1 "$(grep -c 'LIMIT_EXCEEDED: verifying this kernel means 6.87e+10 iteration points' report.txt)"
check "huge verification is refused quickly" 1 "$(( $(date +%s) - start < 60 ))"

"$tirctl" verify "$out/nowhere" > report.txt 2>&1
check "missing directory fails" 1 $?
check "missing directory reason" 1 "$(grep -c 'NOT_FOUND' report.txt)"
exit $fail
