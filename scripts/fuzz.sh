#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) with clang-14 under ASan+UBSan into
# build-fuzz/ and runs each for a bounded time on its seed corpus plus its
# regression inputs. Exits non-zero on any finding (crash, sanitizer report,
# leak, timeout, out-of-memory); the failing input is kept in
# build-fuzz/findings/<target>/ (add it to fuzz/regressions/<target>/ once fixed).
# FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION (libFuzzer's convention) turns off
# the zip CRC-32 check of the checkpoint reader, so that mutated entries reach
# the pickle interpreter and the view checks.
#   scripts/fuzz.sh [SECONDS_PER_TARGET]      default 12 (nine targets: about two minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-12}"
scripts/install-deps.sh --fuzz

san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B build-fuzz -G Ninja \
  -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTXL_FUZZ=ON -DTXL_BUILD_TESTS=OFF \
  -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link $san -DFUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION" \
  -DCMAKE_EXE_LINKER_FLAGS="$san" >/dev/null
ninja -C build-fuzz -j"$(nproc)" fuzzers >&2

targets=()
for t in spec_parser safetensors pickle torch_checkpoint ir_parser graph_json artifact artifact_exec documents; do
  if [[ -x build-fuzz/fuzz/${t}_fuzzer ]]; then targets+=("$t")
  else echo "fuzz: ${t}_fuzzer was not built (its reader is not in this tree), skipped" >&2; fi
done

# Sanitizer settings: abort with a report on the first problem. Leak
# detection stays on: the parsers run no oneDNN or OpenMP code.
export ASAN_OPTIONS="abort_on_error=1:detect_leaks=1:allocator_may_return_null=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"

failed=()
for t in "${targets[@]}"; do
  bin="build-fuzz/fuzz/${t}_fuzzer"
  work="build-fuzz/corpus/$t"        # new inputs go here, never into the repository
  findings="build-fuzz/findings/$t"
  mkdir -p "$work" "$findings"
  dirs=("$work" "fuzz/corpus/$t")
  [[ -d "fuzz/regressions/$t" ]] && dirs+=("fuzz/regressions/$t")
  echo "fuzz: $t for ${seconds}s" >&2
  # artifact_exec runs oneDNN and OpenMP, whose one-time allocations LSan
  # would report: leak detection stays on for the parsers only.
  opts="$ASAN_OPTIONS"
  [[ $t == artifact_exec ]] && opts="${ASAN_OPTIONS/detect_leaks=1/detect_leaks=0}"
  if ! ASAN_OPTIONS="$opts" "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=2048 \
        -max_len=131072 -print_final_stats=1 -artifact_prefix="$findings/" "${dirs[@]}" \
        >"build-fuzz/$t.log" 2>&1; then
    failed+=("$t")
    echo "fuzz: $t FAILED; the log is build-fuzz/$t.log, the input is in $findings/:" >&2
    grep -E "ERROR|SUMMARY|runtime error|fuzz:|Test unit written" "build-fuzz/$t.log" | head -20 >&2 || true
  else
    grep -E "stat::number_of_executed_runs|cov:" "build-fuzz/$t.log" | tail -2 | sed "s/^/fuzz: $t: /" >&2 || true
  fi
done
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz: findings in ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets clean" >&2
