#!/bin/sh
# Counts the PostgreSQL round trips of one bench run through the proxy (README.md here).
#   bench/pgcount/count.sh rounds|inbox BINARY OUT.jsonl
# rounds: the whole run (divide by its rounds); inbox: the timed window only (the bench's
# `inbox bench: window open` / `closed` lines on stderr cut it).
set -eu
what=$1 bin=$2 out=$3
here=$(dirname "$0")
: > "$out"
python3 "$here/pgcount.py" --out "$out" & proxy=$!
sleep 1
url=postgres://postgres@127.0.0.1:6543/test
case $what in
rounds)
    NEXUS_TEST_DATABASE_URL=$url "$bin" --bench > "$out.log" 2>&1
    kill -USR1 $proxy ;;
inbox)
    NEXUS_TEST_DATABASE_URL=$url "$bin" --bench 2>&1 >"$out.log" | while IFS= read -r line; do
        echo "$line" >> "$out.log"
        case $line in
        *"window open"*) kill -USR1 $proxy ;;
        *"window closed"*) kill -USR1 $proxy ;;
        esac
    done ;;
esac
sleep 1
kill $proxy; wait $proxy || true
