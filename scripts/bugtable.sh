#!/usr/bin/env bash
# Re-runs every search in docs/bugs.md's table: each bug's search at a
# release where it was live must FAIL on its property, and the same search
# at the fix (or with the open PR applied as a patch) must find nothing in
# 10,000 scenarios. Prints one line a search and exits 1 on any mismatch.
#   scripts/bugtable.sh [-j JOBS] [-b BINARY] [-o DIR]   (ONLY=regex picks searches by name)
# The 10,000-scenario searches take 5-30 s each on one core: run it where
# cores are plenty (JOBS defaults to the core count).
set -euo pipefail
jobs=$(nproc 2>/dev/null || echo 2)
bin=
out=
while getopts j:b:o: f; do
  case $f in j) jobs=$OPTARG ;; b) bin=$OPTARG ;; o) out=$OPTARG ;; *) exit 2 ;; esac
done
if [ -z "$bin" ]; then
  bin=$(mktemp -d)/statesim
  go build -o "$bin" "$(dirname "$0")/../cmd/statesim"
fi
bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")
out=${out:-$(mktemp -d)}
mkdir -p "$out"

# name | expect (FAIL or ok) | property | check arguments
searches=$(cat <<'TABLE'
A-imposter|FAIL|stale-slot-read|--version v0.13
A-imposter-fixed|ok|stale-slot-read|--version v0.19 --model tiny-hybrid --trials 10000
A-residue|FAIL|no-decode-before-prefill|--version v0.14
A-residue-fixed|ok|no-decode-before-prefill|--version v0.19 --model tiny-hybrid --trials 10000
B-wrap|FAIL|wrong-address-write|--bits 16-20
B-wrap-fixed|ok|wrong-address-write|--trials 10000
gdn-stateless|FAIL|stale-slot-read|--version v0.22 --model qwen3-next-80b-a3b
gdn-stateless-fixed|ok|stale-slot-read|--version v0.31 --model qwen3-next-80b-a3b --trials 10000
kda-stateless|FAIL|stale-slot-read|--version v0.30 --model kimi-k3
kda-stateless-fixed|ok|stale-slot-read|--version v0.31 --model kimi-k3 --trials 10000
cudagraph-k0|FAIL|stale-slot-read|--version v0.31 --model qwen3-next-80b-a3b --set engine.cudagraph_mode=full_and_piecewise --model-runner v1
cudagraph-k0-53059-v1|ok|stale-slot-read|--version v0.31 --model qwen3-next-80b-a3b --set engine.cudagraph_mode=full_and_piecewise --patches +53059 --model-runner v1 --trials 10000
cudagraph-k0-53059-v2|FAIL|stale-slot-read|--version v0.31 --model qwen3-next-80b-a3b --set engine.cudagraph_mode=full_and_piecewise --patches +53059,-51865 --model-runner v2
cudagraph-k0-51865-v2|ok|stale-slot-read|--version v0.31 --model qwen3-next-80b-a3b --set engine.cudagraph_mode=full_and_piecewise --model-runner v2 --trials 10000
cudagraph-mtp|FAIL|stale-slot-read|--version v0.31 --model qwen3-next-80b-a3b --spec mtp --spec-k 1-4 --patches +55898 --model-runner v1 --set engine.cudagraph_mode=full_and_piecewise --prompt-len 2-160
cudagraph-mtp-53059-v1|ok|stale-slot-read|--version v0.31 --model qwen3-next-80b-a3b --spec mtp --spec-k 1-4 --patches +55898,+53059 --model-runner v1 --set engine.cudagraph_mode=full_and_piecewise --trials 10000 --prompt-len 2-160
cudagraph-mtp-51865-v2|ok|stale-slot-read|--version v0.31 --model qwen3-next-80b-a3b --spec mtp --spec-k 1-4 --patches +55898 --model-runner v2 --set engine.cudagraph_mode=full_and_piecewise --trials 10000 --prompt-len 2-160
mtp-short-prompt|FAIL|no-decode-before-prefill|--version v0.14 --model nemotron-nano-9b-v2 --spec mtp,eagle,ngram
mtp-short-prompt-fixed|ok|no-decode-before-prefill|--version v0.19 --model nemotron-nano-9b-v2 --spec mtp,eagle,ngram --trials 10000
min-threshold|FAIL|stale-slot-read|--version v0.31 --model nemotron-nano-9b-v2 --spec mtp --model-runner v1 --prompt-len 2-160
min-threshold-55898|ok|stale-slot-read|--version v0.31 --model nemotron-nano-9b-v2 --spec mtp,eagle,ngram --patches +55898 --model-runner v1 --trials 10000 --prompt-len 2-160
v2-chunk-tie|FAIL|stale-slot-read|--version v0.27 --model nemotron-nano-9b-v2 --spec mtp --patches +55898 --model-runner v2 --prompt-len 2-160
v2-chunk-tie-47808|ok|stale-slot-read|--version v0.28 --model nemotron-nano-9b-v2 --spec mtp,eagle,ngram --patches +55898 --model-runner v2 --trials 10000 --prompt-len 2-160
linear-attn-imposter|FAIL|stale-slot-read|--version v0.31 --model minimax-text-01
mamba1-spec-draft|FAIL|stale-slot-read|--version v0.31 --model tiny-hybrid --spec ngram --prompt-len 2-160
mamba1-spec-draft-mamba2|ok|stale-slot-read|--version v0.31 --model tiny-hybrid-mamba2 --spec ngram --trials 10000 --prompt-len 2-160
eagle-drop|FAIL|stale-slot-read|--version v0.22 --model tiny-hybrid-mamba2 --spec mtp,eagle --prefix-caching align --patches +55898 --set engine.num_gpu_blocks_override=4000 --model-runner v1 --prompt-len 2-160
eagle-drop-48375|ok|stale-slot-read|--version v0.22 --model tiny-hybrid-mamba2 --spec mtp,eagle --prefix-caching align --patches +55898,+48375 --set engine.num_gpu_blocks_override=4000 --model-runner v1 --trials 10000 --prompt-len 2-160
eagle-drop-57128|ok|stale-slot-read|--version v0.22 --model tiny-hybrid-mamba2 --spec mtp,eagle --prefix-caching align --patches +55898,+57128 --set engine.num_gpu_blocks_override=4000 --model-runner v1 --trials 10000 --prompt-len 2-160
eagle-drop-46384|ok|stale-slot-read|--version v0.31 --model tiny-hybrid-mamba2 --spec mtp,eagle --prefix-caching align --patches +55898 --set engine.num_gpu_blocks_override=4000 --model-runner v1 --trials 10000 --prompt-len 2-160
eagle-drop-v031-without-46384|FAIL|stale-slot-read|--version v0.31 --model tiny-hybrid-mamba2 --spec mtp,eagle --prefix-caching align --patches +55898,-46384 --set engine.num_gpu_blocks_override=4000 --model-runner v1 --prompt-len 2-160
align-async-free|FAIL|stale-slot-read|--version v0.19 --model tiny-hybrid-mamba2 --async on --spec mtp,eagle --prefix-caching align --patches -33997,-33352,+55898,+48375,+53919 --set engine.num_gpu_blocks_override=4000
align-async-free-sync|ok|stale-slot-read|--version v0.19 --model tiny-hybrid-mamba2 --async off --spec mtp,eagle --prefix-caching align --patches -33997,-33352,+55898,+48375 --set engine.num_gpu_blocks_override=4000 --trials 10000
align-async-free-33997|ok|stale-slot-read|--version v0.19 --model tiny-hybrid-mamba2 --async on --spec mtp,eagle --prefix-caching align --patches +55898,+48375,+53919 --set engine.num_gpu_blocks_override=4000 --trials 10000
async-accepted-permuted|FAIL|stale-slot-read|--version v0.19 --model tiny-hybrid-mamba2 --async on --spec mtp,eagle --prefix-caching align --patches +55898,+48375 --set engine.num_gpu_blocks_override=4000 --model-runner v1
async-accepted-permuted-53919|ok|stale-slot-read|--version v0.19 --model tiny-hybrid-mamba2 --async on --spec mtp,eagle --prefix-caching align --patches +55898,+48375,+53919 --set engine.num_gpu_blocks_override=4000 --model-runner v1 --trials 10000
async-accepted-race|FAIL|stale-slot-read|--version v0.28 --model tiny-hybrid-mamba2 --async on --spec mtp,eagle --prefix-caching align --patches +55898,+48375 --set engine.num_gpu_blocks_override=4000 --set timing.host_step_us=2000 --model-runner v1 --prompt-len 2-160
async-accepted-race-53919|ok|stale-slot-read|--version v0.28 --model tiny-hybrid-mamba2 --async on --spec mtp,eagle --prefix-caching align --patches +55898,+48375,+53919 --set engine.num_gpu_blocks_override=4000 --set timing.host_step_us=2000 --model-runner v1 --trials 10000 --prompt-len 2-160
async-accepted-race-host-ahead|ok|stale-slot-read|--version v0.28 --model tiny-hybrid-mamba2 --async on --spec mtp,eagle --prefix-caching align --patches +55898,+48375 --set engine.num_gpu_blocks_override=4000 --model-runner v1 --trials 10000 --prompt-len 2-160
async-accepted-race-v2|ok|stale-slot-read|--version v0.28 --model tiny-hybrid-mamba2 --async on --spec mtp,eagle --prefix-caching align --patches +55898,+48375 --set engine.num_gpu_blocks_override=4000 --set timing.host_step_us=2000 --model-runner v2 --trials 10000 --prompt-len 2-160
attn-only-hit-47491|FAIL|stale-slot-read|--version v0.22 --model tiny-hybrid-mamba2 --prefix-caching align --patches +47491
attn-only-hit-47491-seed2|FAIL|stale-slot-read|--seed 2 --version v0.22 --model tiny-hybrid-mamba2 --prefix-caching align --patches +47491
attn-only-hit-released|ok|stale-slot-read|--version v0.22 --model tiny-hybrid-mamba2 --prefix-caching align --trials 10000
attn-only-hit-released-v031|ok|stale-slot-read|--version v0.31 --model tiny-hybrid-mamba2 --prefix-caching align --trials 10000
connector-max-hit-44243|FAIL|stale-slot-read|--version v0.22 --model tiny-hybrid-mamba2 --prefix-caching align --kv-connector NixlConnector --patches -48425
connector-max-hit-44243-seed2|FAIL|stale-slot-read|--seed 2 --version v0.22 --model tiny-hybrid-mamba2 --prefix-caching align --kv-connector NixlConnector --patches -48425
connector-max-hit-48425|ok|stale-slot-read|--version v0.22 --model tiny-hybrid-mamba2 --prefix-caching align --kv-connector NixlConnector --trials 10000
connector-max-hit-50344|ok|stale-slot-read|--version v0.28 --model tiny-hybrid-mamba2 --prefix-caching align --kv-connector NixlConnector --trials 10000
connector-max-hit-44243-all|FAIL|stale-slot-read|--version v0.22 --model tiny-hybrid-mamba2 --prefix-caching all --kv-connector OffloadingConnector --patches -48425
connector-max-hit-48425-all|ok|stale-slot-read|--version v0.22 --model tiny-hybrid-mamba2 --prefix-caching all --kv-connector OffloadingConnector --trials 10000
spec-padded-tail|FAIL|stale-slot-read|--version v0.28 --model tiny-hybrid-mamba2 --spec ngram --prefix-caching align --prompt-len 60-70 --shared 2 --set engine.num_gpu_blocks_override=4000
spec-padded-tail-55178|ok|stale-slot-read|--version v0.31 --model tiny-hybrid-mamba2 --spec ngram --prefix-caching align --prompt-len 60-70 --shared 2 --set engine.num_gpu_blocks_override=4000 --trials 10000
spec-padded-tail-55178-v1|FAIL|stale-slot-read|--version v0.31 --model tiny-hybrid-mamba2 --spec ngram --prefix-caching align --prompt-len 60-70 --shared 2 --set engine.num_gpu_blocks_override=4000 --model-runner v1 --trials 10000
spec-padded-new-prompt|FAIL|stale-slot-read|--version v0.31 --model tiny-hybrid-mamba2 --spec ngram
spec-padded-new-prompt-unpadded|ok|stale-slot-read|--version v0.31 --model tiny-hybrid-mamba2 --spec ngram --patches -45237 --trials 10000
v2-seed-units-53142|FAIL|stale-slot-read|--version v0.31 --model qwen3.5-4b --spec dflash --spec-k 1 --draft 1:11:192:2048 --prefix-caching align --hash-block 9216 --shared 1 --prompt-len 9300-10000 --set engine.max_num_batched_tokens=8448 --set engine.num_gpu_blocks_override=4000 --set engine.long_prefill_token_threshold=0 --set engine.max_num_seqs=1
v2-seed-units-53142-seed2|FAIL|stale-slot-read|--seed 2 --version v0.31 --model qwen3.5-4b --spec dflash --spec-k 1 --draft 1:11:192:2048 --prefix-caching align --hash-block 9216 --shared 1 --prompt-len 9300-10000 --set engine.max_num_batched_tokens=8448 --set engine.num_gpu_blocks_override=4000 --set engine.long_prefill_token_threshold=0 --set engine.max_num_seqs=1
v2-seed-units-53798|ok|stale-slot-read|--version v0.31 --model qwen3.5-4b --spec dflash --spec-k 1 --draft 1:11:192:2048 --prefix-caching align --hash-block 9216 --shared 1 --prompt-len 9300-10000 --set engine.max_num_batched_tokens=8448 --set engine.num_gpu_blocks_override=4000 --set engine.long_prefill_token_threshold=0 --set engine.max_num_seqs=1 --patches +53798 --trials 10000
v2-seed-units-53142-fine|FAIL|stale-slot-read|--version v0.31 --model qwen3-next-80b-a3b --spec dflash --spec-k 1 --draft 1:8:128:2048 --prefix-caching align --hash-block 9248 --shared 1 --prompt-len 9300-10000 --set engine.max_num_batched_tokens=8704 --set engine.num_gpu_blocks_override=4000 --set engine.long_prefill_token_threshold=0 --set engine.max_num_seqs=1
v2-seed-units-53142-fine-seed2|FAIL|stale-slot-read|--seed 2 --version v0.31 --model qwen3-next-80b-a3b --spec dflash --spec-k 1 --draft 1:8:128:2048 --prefix-caching align --hash-block 9248 --shared 1 --prompt-len 9300-10000 --set engine.max_num_batched_tokens=8704 --set engine.num_gpu_blocks_override=4000 --set engine.long_prefill_token_threshold=0 --set engine.max_num_seqs=1
v2-seed-units-53798-fine|ok|stale-slot-read|--version v0.31 --model qwen3-next-80b-a3b --spec dflash --spec-k 1 --draft 1:8:128:2048 --prefix-caching align --hash-block 9248 --shared 1 --prompt-len 9300-10000 --set engine.max_num_batched_tokens=8704 --set engine.num_gpu_blocks_override=4000 --set engine.long_prefill_token_threshold=0 --set engine.max_num_seqs=1 --patches +53798 --trials 10000
fine-grained-hits|ok|stale-slot-read|--version v0.31 --model tiny-hybrid-mamba2 --prefix-caching align --prefix-match-unit 8 --hash-block 8 --shared 6 --set engine.num_gpu_blocks_override=4000 --trials 10000
fine-grained-hits-mtp|ok|stale-slot-read|--version v0.31 --model tiny-hybrid-mamba2 --spec mtp,eagle --spec-k 1-3 --prefix-caching align --prefix-match-unit 8 --hash-block 8 --shared 6 --patches -45237 --set engine.num_gpu_blocks_override=4000 --trials 10000
align-chunk-units-54076|FAIL|stale-slot-read|--version v0.31 --model qwen3.5-4b --spec dflash --spec-k 1 --draft 1:11:192:2048 --prefix-caching align --hash-block 9216 --shared 1 --prompt-len 9300-20000 --set engine.max_num_batched_tokens=2048 --set engine.num_gpu_blocks_override=8000 --set engine.long_prefill_token_threshold=0 --set engine.max_num_seqs=1 --patches +53798
align-chunk-units-54076-seed2|FAIL|stale-slot-read|--seed 2 --version v0.31 --model qwen3.5-4b --spec dflash --spec-k 1 --draft 1:11:192:2048 --prefix-caching align --hash-block 9216 --shared 1 --prompt-len 9300-20000 --set engine.max_num_batched_tokens=2048 --set engine.num_gpu_blocks_override=8000 --set engine.long_prefill_token_threshold=0 --set engine.max_num_seqs=1 --patches +53798
align-chunk-units-fixed|ok|stale-slot-read|--version v0.31 --model qwen3.5-4b --spec dflash --spec-k 1 --draft 1:11:192:2048 --prefix-caching align --hash-block 9216 --shared 1 --prompt-len 9300-20000 --set engine.max_num_batched_tokens=2048 --set engine.num_gpu_blocks_override=8000 --set engine.long_prefill_token_threshold=0 --set engine.max_num_seqs=1 --patches +53798,+54076 --trials 10000
spec-padded-new-prompt-gdn|FAIL|no-decode-before-prefill|--version v0.31 --model qwen3-next-80b-a3b --spec ngram
spec-padded-new-prompt-gdn-unpadded|ok|no-decode-before-prefill|--version v0.31 --model qwen3-next-80b-a3b --spec ngram --patches -45237 --trials 10000
TABLE
)

one() {
  IFS='|' read -r name expect prop args <<<"$1"
  dir=$out/$name
  mkdir -p "$dir"
  # shellcheck disable=SC2086
  # Seed 1 unless the row names its own. bash's own timer: the GPU host
  # has no /usr/bin/time.
  case " $args " in *" --seed "*) ;; *) args="--seed 1 $args" ;; esac
  ( cd "$dir" && TIMEFORMAT='%R %U' && { time "$bin" check $args --property "$prop" >out.txt 2>&1; } 2>time.txt ) || true
  line=$(grep -E "^  $prop +" "$dir/out.txt" | head -1 | sed -E 's/^  +//; s/ +/ /')
  got=ok
  case $line in *FAIL*) got=FAIL ;; *ok*) got=ok ;; *) got=error ;; esac
  verdict=match
  [ "$got" = "$expect" ] || verdict=MISMATCH
  read -r wall user <"$dir/time.txt" || true
  printf '%-26s expect %-4s %-8s %s (%s s wall, %s s user)\n' "$name" "$expect" "$verdict" "$line" "$wall" "$user"
}
export -f one
export bin out
printf '%s\n' "$searches" | grep -E "^(${ONLY:-.*})\|" | xargs -P "$jobs" -I{} bash -c 'one "$@"' _ {} | sort >"$out/summary.txt"
cat "$out/summary.txt"
! grep -q MISMATCH "$out/summary.txt"
