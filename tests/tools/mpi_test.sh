#!/bin/sh
# tests/tools/mpi_test.sh TXLC MODELS_DIR MPIRUN CASE [FAULT_LIB] - split runs under mpirun against one process.
#
#   documents  --documents on a corpus made from the bundled validation texts
#              (both models, error lines included): batch 1 and batch 4 in one
#              process, then mpirun -np 2 and -np 3: byte-identical lines and totals
#   streams    one long text with --batch 6: -np 2 and -np 3 give the single
#              process's tokens and nll_sum bit for bit (--json)
#   kill       rank 1 SIGKILLed midway: the job fails within 30 s, names the
#              rank, leaves no output file; --resume then equals an uninterrupted run
#   hang       rank 1 stopped (SIGSTOP): rank 0 gives up after --rank-timeout with
#              one line naming rank 1, exit 5, no output file
#   disagree   ranks given different models, corpora, texts or options (mpirun's
#              MPMD form, one command line per rank): every rank stops before
#              scoring, exit 3, one txlc line from rank 0 naming rank 1 and what
#              differs, no output file
#   misbehave  rank 1 sends rank 0 what it should not (tests/tools/mpi_fault.c,
#              preloaded into rank 1 only): a result twice, another rank's
#              work, no results, a truncated message; for documents and for
#              the streams of one text. Every job ends with exit 4 within
#              60 s, one txlc line from rank 0 naming rank 1, no output file
#              and no totals: never a mixed result
#   interrupt  SIGTERM to mpirun midway (as a Ctrl-C or a scheduler ends a job): the
#              ranks stop, rank 0 writes the summary marked interrupted and keeps
#              FILE.partial with the lines complete in order; --resume then equals
#              an uninterrupted run
set -u
TXLC=$1
M=$2
MPIRUN=$3
CASE=$4
FAULT_LIB=${5:-}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# Root in containers; oversubscribed 2-core machines; no ptrace-based single copy.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OMP_WAIT_POLICY=passive
mpi() { n=$1; shift; "$MPIRUN" --oversubscribe --bind-to none -np "$n" "$TXLC" "$@"; }
fail() { echo "FAIL: $*"; exit 1; }
same() { cmp -s "$1" "$2" || { echo "FAIL: $1 and $2 differ:"; diff "$1" "$2" | head -5; exit 1; }; }
# settle JOB SECONDS: waits at most SECONDS for the background mpirun JOB to exit and sets
# code to its status. Open MPI 4.1's mpirun now and then hangs after an MPI_Abort although
# every rank has exited (they stay its zombies): then it is killed and code is "hung" (the
# ranks did their part; mpirun's status is lost). A rank still running (not exited, not
# stopped by the test) after SECONDS fails.
settle() {
  k=0
  while st=$(ps -o stat= -p "$1") && [ "${st#Z}" = "$st" ] && [ "$k" -lt $(($2 * 10)) ]; do
    sleep 0.1
    k=$((k + 1))
  done
  if st=$(ps -o stat= -p "$1") && [ "${st#Z}" = "$st" ]; then
    live=$(ps -o stat= --ppid "$1" | grep -c '^[RSD]')
    kill -KILL "$1"
    wait "$1"
    [ "$live" -eq 0 ] || fail "the job still runs after $2 s: $(head -c 600 "$T/err")"
    echo "note: mpirun hung after its ranks exited (Open MPI); its exit status is not checked"
    code=hung
    return
  fi
  wait "$1"
  code=$?
}
# The summary without its timings and its process counts.
totals() { grep -v -e '"seconds"' -e '_per_second"' -e '"ranks"' "$1"; }

# A corpus: short lines of a validation text, with bad documents among them.
corpus() {  # corpus MODEL LINES OUT
  sed -n "1,$2p" "$M/$1/valid.txt" | cut -c1-150 > "$3.tmp"
  { sed -n '1,20p' "$3.tmp"; echo; printf 'x\n'; sed -n '21,$p' "$3.tmp"; } > "$3"
  rm -f "$3.tmp"
}

case "$CASE" in
documents)
  corpus kjv-char 240 "$T/char.txt"
  printf 'caf\303\251 au lait\n' >> "$T/char.txt"  # a character outside the vocabulary: an error line
  # JSON Lines with ids for the word model.
  sed -n '1,200p' "$M/kjv-words/valid.txt" |
    awk '{gsub(/\\/,"\\\\"); gsub(/"/,"\\\""); printf "{\"id\": \"w%d\", \"text\": \"%s\"}\n", NR, $0}' > "$T/words.jsonl"
  printf '{"id": "bad", "txt": "no text"}\nnot json\n{"id": "empty", "text": ""}\n' >> "$T/words.jsonl"
  for model in kjv-char kjv-words; do
    in=$T/char.txt
    [ "$model" = kjv-words ] && in=$T/words.jsonl
    "$TXLC" score "$M/$model" --documents "$in" --batch 4 --qlen 32 -o "$T/one.jsonl" --summary "$T/one.json" ||
      fail "$model: one process"
    [ "$(wc -l < "$T/one.jsonl")" -eq "$(wc -l < "$in")" ] || fail "$model: not one line per document"
    [ "$(grep -c '"error"' "$T/one.jsonl")" -eq 3 ] || fail "$model: expected 3 error lines: $(grep error "$T/one.jsonl")"
    [ -e "$T/one.jsonl.partial" ] && fail "$model: FILE.partial left behind"
    for n in 2 3; do
      mpi "$n" score "$M/$model" --documents "$in" --batch 4 --qlen 32 -o "$T/np$n.jsonl" --summary "$T/np$n.json" ||
        fail "$model: mpirun -np $n"
      same "$T/one.jsonl" "$T/np$n.jsonl"
      totals "$T/one.json" > "$T/a"
      totals "$T/np$n.json" > "$T/b"
      same "$T/a" "$T/b"
      grep -q "\"ranks\": $n" "$T/np$n.json" || fail "$model: the summary does not say $n ranks"
    done
    # The batch it ran in does not change a document's bits.
    "$TXLC" score "$M/$model" --documents "$in" --batch 1 --qlen 32 -o "$T/b1.jsonl" --summary "$T/b1.json" ||
      fail "$model: batch 1"
    same "$T/one.jsonl" "$T/b1.jsonl"
  done
  ;;
streams)
  head -c 30000 "$M/kjv-char/valid.txt" > "$T/text.txt"
  for model in kjv-char kjv-words; do
    in=$T/text.txt
    [ "$model" = kjv-words ] && { head -n 300 "$M/kjv-words/valid.txt" > "$T/words.txt"; in=$T/words.txt; }
    "$TXLC" score "$M/$model" "$in" --batch 6 --json > "$T/one.json" 2>/dev/null || fail "$model: one process"
    grep -e '"tokens"' -e '"nll_sum"' -e '"segments"' "$T/one.json" > "$T/a"
    for n in 2 3; do
      mpi "$n" score "$M/$model" "$in" --batch 6 --json > "$T/np$n.json" 2>/dev/null || fail "$model: mpirun -np $n"
      grep -e '"tokens"' -e '"nll_sum"' -e '"segments"' "$T/np$n.json" > "$T/b"
      same "$T/a" "$T/b"
    done
  done
  ;;
kill | hang)
  cut -c1-60 "$M/kjv-char/valid.txt" > "$T/big.txt"
  "$TXLC" score "$M/kjv-char" --documents "$T/big.txt" --batch 4 --qlen 32 -o "$T/whole.jsonl" --summary "$T/s.json" ||
    fail "the uninterrupted run"
  timeout=""
  [ "$CASE" = hang ] && timeout="--rank-timeout 2"
  # Each rank's stderr straight into a file of its own (err.0, err.1): a line a rank prints just
  # before MPI_Abort can be lost on its way through mpirun when the machine is busy (mpirun may
  # end the job before it reads it); mpirun's own reports stay in err.
  "$MPIRUN" --oversubscribe --bind-to none -np 2 sh -c "exec \"\$0\" \"\$@\" 2> '$T/err.'\$OMPI_COMM_WORLD_RANK" \
    "$TXLC" score "$M/kjv-char" --documents "$T/big.txt" --batch 4 \
    --qlen 32 -o "$T/out.jsonl" --summary "$T/s2.json" $timeout 2> "$T/err" &
  job=$!  # mpirun: the ranks on this machine are its children
  # Rank 1: the child of mpirun whose environment says so; act once rank 0 wrote some lines.
  victim=""
  for i in $(seq 1 600); do
    if [ -z "$victim" ]; then
      for p in $(pgrep -P "$job" 2>/dev/null); do
        tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1' && victim=$p
      done
    fi
    [ -n "$victim" ] && [ -s "$T/out.jsonl.partial" ] && [ "$(wc -l < "$T/out.jsonl.partial")" -gt 20 ] && break
    sleep 0.05
  done
  [ -n "$victim" ] || { kill "$job" 2>/dev/null; fail "rank 1 not found"; }
  start=$(date +%s)
  if [ "$CASE" = kill ]; then kill -KILL "$victim"; else kill -STOP "$victim"; fi
  settle "$job" 60
  took=$(( $(date +%s) - start ))
  kill -KILL "$victim" 2>/dev/null
  cat "$T/err.0" "$T/err.1" >> "$T/err" 2>/dev/null
  [ "$code" != 0 ] || fail "the job exited 0 after rank 1 was stopped or killed"
  [ "$took" -le 30 ] || fail "the job took $took s to fail"
  grep -q 'rank 1' "$T/err" || fail "no line names rank 1: $(cat "$T/err")"
  [ "$CASE" = hang ] && { grep -q 'txlc: error: rank 1 of 2: sent nothing for 2 s' "$T/err.0" || fail "hang: $(cat "$T/err")"; }
  [ "$CASE" = hang ] && [ "$code" != 5 ] && [ "$code" != hung ] && fail "hang: exit $code, expected 5"
  [ -e "$T/out.jsonl" ] && fail "a partial output file"
  [ -s "$T/out.jsonl.partial" ] || fail "no FILE.partial to resume from"
  echo "the failed job, exit $code after $took s, said:"
  cat "$T/err"
  kept=$(wc -l < "$T/out.jsonl.partial")
  mpi 2 score "$M/kjv-char" --documents "$T/big.txt" --batch 4 --qlen 32 -o "$T/out.jsonl" --summary "$T/s3.json" \
    --resume || fail "--resume"
  same "$T/whole.jsonl" "$T/out.jsonl"
  grep -q "\"resumed\": $kept" "$T/s3.json" || fail "expected $kept resumed documents: $(cat "$T/s3.json")"
  totals "$T/s.json" | grep -v -e '"scored"' -e '"resumed"' > "$T/a"
  totals "$T/s3.json" | grep -v -e '"scored"' -e '"resumed"' > "$T/b"
  same "$T/a" "$T/b"
  ;;
disagree)
  corpus kjv-char 40 "$T/a.txt"
  sed 's/e/E/g' "$T/a.txt" > "$T/b.txt"
  # two RANK0_ARGS -- RANK1_ARGS... PATTERN: one rank's command line each.
  two() {
    pattern=$1; shift
    "$MPIRUN" --oversubscribe --bind-to none "$@" > "$T/out" 2> "$T/err"
    code=$?
    [ "$code" -eq 3 ] || fail "exit $code, expected 3: $(head -c 800 "$T/err")"
    [ "$(grep -c '^txlc:' "$T/err")" -eq 1 ] || fail "expected one txlc line: $(cat "$T/err")"
    grep -q "^txlc: error: rank 1 of 2: $pattern, expected rank 0's [0-9a-f]* (every rank must be given the same model, input and options)\$" "$T/err" ||
      fail "expected /$pattern/: $(cat "$T/err")"
    [ -e "$T/o.jsonl" ] && fail "an output file"
    [ -e "$T/o.jsonl.partial" ] && fail "a FILE.partial"
    grep '^txlc:' "$T/err"
  }
  two 'model content hash [0-9a-f]*' \
    -np 1 "$TXLC" score "$M/kjv-char" --documents "$T/a.txt" -o "$T/o.jsonl" : \
    -np 1 "$TXLC" score "$M/kjv-words" --documents "$T/a.txt" -o "$T/o.jsonl"
  two 'input fingerprint [0-9a-f]*' \
    -np 1 "$TXLC" score "$M/kjv-char" --documents "$T/a.txt" -o "$T/o.jsonl" : \
    -np 1 "$TXLC" score "$M/kjv-char" --documents "$T/b.txt" -o "$T/o.jsonl"
  two 'fingerprint of the options that change results [0-9a-f]*' \
    -np 1 "$TXLC" score "$M/kjv-char" --documents "$T/a.txt" --qlen 32 -o "$T/o.jsonl" : \
    -np 1 "$TXLC" score "$M/kjv-char" --documents "$T/a.txt" --qlen 16 -o "$T/o.jsonl"
  # One text cut into streams: another text on rank 1 (of another length).
  head -c 6000 "$M/kjv-char/valid.txt" > "$T/t1.txt"
  head -c 5000 "$M/kjv-char/valid.txt" > "$T/t2.txt"
  two 'input fingerprint [0-9a-f]*' \
    -np 1 "$TXLC" score "$M/kjv-char" "$T/t1.txt" --batch 2 : -np 1 "$TXLC" score "$M/kjv-char" "$T/t2.txt" --batch 2
  ;;
misbehave)
  [ -n "$FAULT_LIB" ] || fail "misbehave needs the fault library (FAULT_LIB)"
  corpus kjv-char 240 "$T/docs.txt"
  head -c 30000 "$M/kjv-char/valid.txt" > "$T/text.txt"
  # bad INPUT MODE PATTERN: the corpus (docs) or the text (text) with rank 1 preloaded with the
  # fault MODE; rank 0 must name what rank 1 did (PATTERN, the end of its line).
  bad() {
    if [ "$1" = docs ]; then
      set -- "$2" "$3" score "$M/kjv-char" --documents "$T/docs.txt" --batch 4 --qlen 32 -o "$T/o.jsonl"
    else
      set -- "$2" "$3" score "$M/kjv-char" "$T/text.txt" --batch 6 --json
    fi
    mode=$1; pattern=$2; shift 2
    rm -f "$T/o.jsonl" "$T/o.jsonl.partial"
    "$MPIRUN" --oversubscribe --bind-to none -np 1 "$TXLC" "$@" : \
      -np 1 env LD_PRELOAD="$FAULT_LIB" TXLC_TEST_MPI_FAULT="$mode" "$TXLC" "$@" > "$T/out" 2> "$T/err" &
    settle $! 60
    # Open MPI 4.1's mpirun also, now and then, crashes in its own PMIx
    # finalize after the MPI_Abort (exit 139, a backtrace through
    # PMIx_server_finalize on stderr): its status is then lost as when it hangs.
    if [ "$code" = 139 ] && grep -q 'libpmix[^ ]*(PMIx_server_finalize' "$T/err"; then
      echo "note: mpirun crashed in PMIx_server_finalize after its ranks exited (Open MPI); its exit status is not checked"
      code=crashed
    fi
    [ "$code" = hung ] || [ "$code" = crashed ] || [ "$code" -eq 4 ] || fail "$mode: exit $code, expected 4: $(head -c 800 "$T/err")"
    [ "$(grep -c '^txlc:' "$T/err")" -eq 1 ] || fail "$mode: expected one txlc line: $(cat "$T/err")"
    grep -q "^txlc: rank 0 of 2: internal error at .*$pattern" "$T/err" || fail "$mode: expected /$pattern/: $(cat "$T/err")"
    [ -e "$T/o.jsonl" ] && fail "$mode: an output file"
    grep -q 'nll_sum' "$T/out" && fail "$mode: totals on stdout: $(cat "$T/out")"
    echo "$mode ($code): $(grep '^txlc:' "$T/err" | sed 's/.*(\(.*\))$/\1/')"
  }
  bad docs duplicate '(document [0-9]* from rank 1, which is not one of its share still to score)$'
  bad docs foreign '(document [0-9]* from rank 1, which is not one of its share still to score)$'
  bad docs drop "(documents without a result after every rank finished, the first: document [0-9]* of rank 1's share)\$"
  bad text duplicate '(streams \[3, 6) from rank 1, which are not its share \[3, 6) or came twice)$'
  bad text foreign '(streams \[0, 3) from rank 1, which are not its share \[3, 6) or came twice)$'
  bad text drop '(rank 1 finished without sending the NLLs of its streams \[3, 6))$'
  bad text truncate '(a message from another rank is truncated)$'
  ;;
interrupt)
  for i in 1 2 3 4 5 6 7 8; do cut -c1-60 "$M/kjv-char/valid.txt"; done > "$T/big.txt"
  "$TXLC" score "$M/kjv-char" --documents "$T/big.txt" --batch 4 -o "$T/whole.jsonl" --summary "$T/s.json" ||
    fail "the uninterrupted run"
  "$MPIRUN" --oversubscribe --bind-to none -np 2 "$TXLC" score "$M/kjv-char" --documents "$T/big.txt" --batch 4 \
    -o "$T/out.jsonl" --summary "$T/s2.json" 2> "$T/err" &
  job=$!
  for i in $(seq 1 600); do
    [ -s "$T/out.jsonl.partial" ] && [ "$(wc -l < "$T/out.jsonl.partial")" -gt 20 ] && break
    sleep 0.05
  done
  kill -TERM "$job"
  wait "$job"
  code=$?
  [ "$code" -ne 0 ] || fail "the interrupted job exited 0: $(cat "$T/err")"
  grep -q 'txlc: score: interrupted by SIGTERM after [0-9]* of [0-9]* documents' "$T/err" ||
    fail "no interrupted line: $(cat "$T/err")"
  [ -e "$T/out.jsonl" ] && fail "an output file from an interrupted run"
  kept=$(wc -l < "$T/out.jsonl.partial")
  grep -q '"interrupted": true' "$T/s2.json" || fail "the summary is not marked interrupted: $(cat "$T/s2.json")"
  grep -q "\"written\": $kept\$" "$T/s2.json" || fail "the summary does not count the $kept lines: $(cat "$T/s2.json")"
  [ "$kept" -lt "$(wc -l < "$T/whole.jsonl")" ] || fail "the job was not interrupted midway"
  head -n "$kept" "$T/whole.jsonl" | cmp -s - "$T/out.jsonl.partial" || fail "the kept lines differ from the whole run's"
  mpi 2 score "$M/kjv-char" --documents "$T/big.txt" --batch 4 -o "$T/out.jsonl" --summary "$T/s3.json" --resume ||
    fail "--resume"
  same "$T/whole.jsonl" "$T/out.jsonl"
  echo "interrupted after $kept lines, exit $code; stderr:"
  cat "$T/err"
  ;;
*)
  fail "unknown case $CASE"
  ;;
esac
echo "ok: $CASE"
