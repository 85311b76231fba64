for c in "$@"; do CUPY_CACHE_DIR=$(mktemp -d) FNX_CACHE_DIR=$(mktemp -d) python3 benchmarks/mlp_train.py --child fnx $c fp32 | sed "s/^/$c fp32 cold: /"; done
