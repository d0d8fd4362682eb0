#!/usr/bin/env bash
# experiments_job.sh - one GPU-machine call (issue 13): runs the experiments E<n> given in EXPS
# (default: all, in the order of the list below) with `decodelab experiment --full`, each under
# its own time limit, stopping when the call's budget BUDGET_S (default 400 s) is spent; an
# interrupted experiment is resumed by a later call with the same command (--resume, rows kept
# in $OUT's tarball are not carried back: rerun it whole). Writes $OUT/experiments.tgz (the
# result folders) and prints each experiment's verdict lines. Exit status: 2 when an experiment exited 2 (a bad file
# or a step that could not run), else 0 (an experiment cut by the budget, 124, is resumed by a later call).
# Expects .carry/decodelab.gz (the static binary).
set -uo pipefail
: "${OUT:?}"
mkdir -p "$OUT"
gunzip -c .carry/decodelab.gz > /tmp/dl && chmod +x /tmp/dl
EXPS=${EXPS:-"E3 E7 E1 E4 E5 E6 E8 E2"}
BUDGET_S=${BUDGET_S:-400}
start=$(date +%s)
bad=0
mkdir -p /tmp/exp
for e in $EXPS; do
    cfg=$(ls experiments/${e}_*.cfg 2>/dev/null | head -1)
    [ -n "$cfg" ] || { echo "$e: no experiments/${e}_*.cfg"; continue; }
    left=$(( BUDGET_S - ($(date +%s) - start) ))
    if [ $left -lt 20 ]; then echo "$e: not run (call budget spent)"; continue; fi
    name=$(basename "$cfg" .cfg)
    timeout $left /tmp/dl experiment "$cfg" --full --cache /tmp/gc --out /tmp/exp/$name > /tmp/exp/$name.log 2>&1
    rc=$?
    [ $rc -eq 2 ] && bad=2
    echo "== $name: exit $rc ($(( $(date +%s) - start )) s into the call)"
    # each verdict with its observed range and the claim's interval (the whole rows are in the tarball)
    [ -f /tmp/exp/$name/verdicts.csv ] && python3 -c 'import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    print("  %-4s %-12s observed %s .. %s, claim [%s, %s], n %s" % (r["hypothesis"], r["verdict"], r["value_min"], r["value_max"], r["lo"], r["hi"], r["n_obs"]))' /tmp/exp/$name/verdicts.csv
done
tar czf "$OUT/experiments.tgz" --exclude=.lock -C /tmp exp
exit $bad
