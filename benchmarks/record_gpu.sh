#!/usr/bin/env bash
# What tests/data keeps from a borrowed GPU machine, recorded in one command.
#
# Run on the device machine from the repository's root, with Keras carried
# as wheels in .whl/ (the device tool's recipe: keras==3.15.1, namex,
# optree, google-crc32c for cp312):
#
#   bash benchmarks/record_gpu.sh "$OUT" truth distributed2
#   bash benchmarks/record_gpu.sh "$OUT" distributed4
#   bash benchmarks/record_gpu.sh "$OUT" tried
#
# truth: tests/support/truth_fits.py on JAX and PyTorch, on the GPU (-> h100_truth/);
# demo: `python -m demo` on JAX (full) and PyTorch (--quick), every scenario
# on the CPU and the GPU, with what it printed (-> h100_demo/);
# tried: `python -m demo.tried` (tb_devicecost.try_fixes) on JAX and PyTorch,
# each scenario (the MLP from arrays at batch 10 and 32, the Python-input
# PyDataset) in a process of its own with a 15 s budget, at most 70 s each:
# about 6 minutes in all (-> h100_tried/<backend>/<scenario>/tried/...);
# distributedN: benchmarks/gpu_distributed.py with N processes, one GPU
# each, the MLP, or the models KINDS names (KINDS=mlp,cnn -> h100xN/mlp_cnn;
# default -> h100xN/mlp), ROUNDS pairs of fits each. Each part lands in OUT as one archive
# (the device tool brings files back at most two folders down); unpack
# them under tests/data/.
set -u
case ${1:-} in
  -h|--help|"") sed -n '2,23p' "$0"; exit 0;;
esac
out=$1; shift
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 TF_CPP_MIN_LOG_LEVEL=3
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader | head -4
for part in "$@"; do
    root=/tmp/record/$part
    rm -rf "$root"; mkdir -p "$root"
    began=$(date +%s)
    case $part in
        truth)
            mkdir -p "$root/h100_truth"
            for backend in jax torch; do
                CUDA_VISIBLE_DEVICES=0 python3 tests/support/truth_fits.py "$backend" \
                    "$root/h100_truth/$backend" > "$root/h100_truth/$backend.json" \
                    2> "$out/truth_$backend.log" || echo "truth $backend failed"
            done
            ;;
        demo)
            mkdir -p "$root/h100_demo"
            for backend in jax torch; do
                quick=""; [ "$backend" = torch ] && quick="--quick"
                KERAS_BACKEND=$backend timeout "${DEMO_LIMIT:-900}" python3 -m demo --no-serve $quick \
                    --logdir "$root/h100_demo/$backend" \
                    > "$root/h100_demo/${backend}_report.txt" 2> "$out/demo_$backend.log" \
                    || echo "demo $backend failed"
                tail -3 "$root/h100_demo/${backend}_report.txt"
            done
            ;;
        tried)
            for backend in jax torch; do
                mkdir -p "$root/h100_tried/$backend"
                for scenario in mlp_b10 mlp_b32 python_input; do
                    KERAS_BACKEND=$backend CUDA_VISIBLE_DEVICES=0 timeout "${TRIED_LIMIT:-70}" \
                        python3 -m demo.tried "$root/h100_tried/$backend" --budget "${TRIED_BUDGET:-15}" \
                        --scenarios "$scenario" --json "$root/h100_tried/$backend/$scenario.json" \
                        >> "$root/h100_tried/$backend/summary.txt" 2>> "$out/tried_$backend.log" \
                        || echo "tried $backend $scenario failed"
                done
                cat "$root/h100_tried/$backend/summary.txt"
            done
            ;;
        distributed*)
            count=${part#distributed}
            kinds=${KINDS:-mlp}; case_dir="$root/h100x$count/${kinds//,/_}"
            python3 benchmarks/gpu_distributed.py --out "$case_dir" \
                --processes "$count" --kinds "$kinds" --rounds "${ROUNDS:-15}" 2>&1 | tee "$out/$part.log" | tail -40
            rm -rf "$case_dir/logs" "$case_dir/scratch"
            ;;
        *) echo "unknown part: $part"; continue ;;
    esac
    echo "$part took $(( $(date +%s) - began )) s"
    tar czf "$out/$part.tar.gz" -C "$root" .
done
