#!/usr/bin/env bash
# Measure the link the KV cache crosses with perftest, for the app's "Measured" page.
#
# Run the server half on the decode node first, then the client half on the prefill node:
#   decode$  DEV=mlx5_0 ./perftest.sh server
#   prefill$ DEV=mlx5_0 ./perftest.sh client <decode-host>
# Both halves must get the same options, so run the same script on both.  Each run writes
# ib_write_bw*.txt / .json next to the client; upload any of them on the Measured page.
#
# Units: perftest's "MB/sec" column is MiB/s (bytes / 2^20 per second; newer versions print
# "MiB/sec"), --report_gbits prints Gbit/s (bytes / 1.25e8).  The page reads all three.
set -euo pipefail

DEV=${DEV:-mlx5_0}     # the NIC the KV transfer uses (ibv_devices lists them)
GID=${GID:-}           # RoCE only: the GID index (show_gids), e.g. 3; empty on InfiniBand
PORT=${PORT:-18515}    # perftest's TCP port for the handshake
OUT=${OUT:-ib_write_bw}

usage() {
    echo "usage: $0 server | client SERVER_HOST" >&2
    exit 2
}

role=${1:-}
[[ $role == server || $role == client ]] || usage
host=""
if [[ $role == client ]]; then
    host=${2:-}
    [[ -n $host ]] || usage
fi

common=(-d "$DEV" -F -a)  # -a: every message size 2 B … 8 MiB; -F: ignore CPU-frequency warnings
[[ -n $GID ]] && common+=(-x "$GID")

# One server/client pair per variant; the server exits after each test.
run() {  # run <port offset> <output file> <extra perftest options…>
    local port=$((PORT + $1)) out=$2
    shift 2
    if [[ $role == server ]]; then
        ib_write_bw "${common[@]}" -p "$port" "$@"
    else
        sleep "${WAIT:-2}"  # let the server start listening
        ib_write_bw "${common[@]}" -p "$port" "$@" "$host" | tee "$out"
    fi
}

run 0 "$OUT.txt"                      # BW average[MB/sec]  (MiB/s)
run 1 "${OUT}_gbits.txt" --report_gbits  # BW average[Gb/sec]
# --out_json needs a recent perftest (24.x); the text outputs above need nothing new.
run 2 "${OUT}_json.log" --out_json --out_json_file="$OUT.json"

if [[ $role == client ]]; then
    echo "wrote $OUT.txt, ${OUT}_gbits.txt and $OUT.json: upload one on the Measured page"
fi
