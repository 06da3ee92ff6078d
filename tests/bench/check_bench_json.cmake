# Runs `txlc bench` on a tiny spec with --json and checks that every key of
# docs/PERFORMANCE.md is there with a sane value. -DTXLC=... -DSPEC=...
# [-DEXTRA="--passes;none"] (more flags for every run)

function(run_bench out)
  execute_process(COMMAND ${TXLC} bench ${SPEC} --random-weights --segments 2 --warmup 1 --json --probe-mib 64
                          --threads 2 ${EXTRA} ${ARGN}
                  OUTPUT_VARIABLE json ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "txlc bench ${ARGN} failed (${rc}): ${err}")
  endif()
  set(${out} "${json}" PARENT_SCOPE)
endfunction()

# A number at `key` that must be > 0 (and, with `max`, <= max).
function(expect_positive json key)
  string(JSON value ERROR_VARIABLE e GET "${json}" ${key})
  if(e)
    message(FATAL_ERROR "key '${key}' missing: ${e}\n${json}")
  endif()
  if(NOT value GREATER 0)
    message(FATAL_ERROR "'${key}' = ${value}, expected > 0\n${json}")
  endif()
  if(ARGC GREATER 2)
    if(value GREATER ${ARGV2})
      message(FATAL_ERROR "'${key}' = ${value}, expected <= ${ARGV2}\n${json}")
    endif()
  endif()
endfunction()

# A segment of 8 tokens with a prefilled memory, the NLL through the adaptive softmax.
run_bench(seg --prefill --nll --profile)
foreach(key tokens_per_s ms_per_segment avg_ms p90_ms p95_ms p99_ms useful_gflops matmul_peak_gflops
            read_bandwidth_gbs peak_rss_bytes)
  expect_positive("${seg}" ${key})
endforeach()
expect_positive("${seg}" efficiency 1.5)
string(JSON mlen GET "${seg}" mlen)
if(NOT mlen EQUAL 16)
  message(FATAL_ERROR "--prefill: expected 16 remembered positions in the timed segments, got ${mlen}")
endif()
string(JSON floor TYPE "${seg}" memory_floor_ms)
if(NOT floor STREQUAL "NULL")
  message(FATAL_ERROR "memory_floor_ms is for qlen 1 only (null otherwise), got a ${floor}")
endif()
string(JSON nsteps LENGTH "${seg}" profile)
if(nsteps LESS 10)
  message(FATAL_ERROR "--profile: expected a row per plan step, got ${nsteps}")
endif()
string(JSON nref LENGTH "${seg}" ref_impls)
if(NOT nref EQUAL 0)
  message(FATAL_ERROR "a primitive runs a ref implementation:\n${seg}")
endif()
# avg within [min, max], percentiles ordered
string(JSON p90 GET "${seg}" p90_ms)
string(JSON p99 GET "${seg}" p99_ms)
if(p90 GREATER p99)
  message(FATAL_ERROR "p90 ${p90} > p99 ${p99}")
endif()

# One token at a time: the memory floor.
run_bench(tok --qlen 1 --prefill)
expect_positive("${tok}" memory_floor_ms)
expect_positive("${tok}" memory_floor_ratio)

# The vanilla sliding window against the memory at L = 12.
run_bench(win --sliding-window 12)
string(JSON speedup GET "${win}" sliding_window speedup)
if(NOT speedup GREATER 0)
  message(FATAL_ERROR "sliding_window.speedup = ${speedup}\n${win}")
endif()
message(STATUS "bench smoke test passed")
