#!/bin/bash
# Full-disk sweep (issue 45; root, it mounts tmpfs): a HELIOS build on a 4 MiB tmpfs, stopped after
# N steps (0..12), the disk filled to K KiB left (0, 8, 24, 60, 120); `run` must fail in one line
# naming a file of the build (never "internal error"), and with the space back `run` must end at
# the tree an undamaged build ends at. Prints the failures and "sweep: OK ok, BAD bad".
#   npm run build && bash scripts/full-disk-sweep.sh
ROOT=$(cd "$(dirname "$0")/.." && pwd)
L=$ROOT/bin/longbuild.js; H=$ROOT/test/fixtures/helios.json
clean=$(mktemp -d); cd $clean; node $L init --blueprint $H >/dev/null 2>&1; node $L run >/dev/null 2>&1; CT=$(git rev-parse refs/heads/longbuild/integration^{tree})
ok=0; bad=0
for steps in 0 1 2 3 4 5 6 7 8 9 10 11 12; do for leave in 0 8 24 60 120; do
  m=$(mktemp -d); mount -t tmpfs -o size=4m tmpfs $m; r=$(mktemp -d); cd $r
  node $L init --blueprint $H --dir $m/b >/dev/null 2>&1
  for i in $(seq 1 $steps); do node $L step --dir $m/b >/dev/null 2>&1; done
  python3 -c "
import os; s=os.statvfs('$m'); n=max(0, s.f_bavail*s.f_bsize - $leave*1024); open('$m/filler','wb').write(b'0'*n)" 2>/dev/null
  out=$(node $L run --dir $m/b --progress off 2>&1 >/dev/null); rc=$?
  last=$(echo "$out" | tail -1)
  rm -f $m/filler
  node $L run --dir $m/b --progress off >/dev/null 2>&1; rc2=$?
  T=$(git rev-parse refs/heads/longbuild/integration^{tree} 2>/dev/null)
  if [ $rc -eq 0 ] || { echo "$last" | grep -qE "^longbuild: (no space left for|I/O error on|.* cannot be written)" && ! echo "$out" | grep -q "internal error"; }; then
     if [ $rc2 -eq 0 ] && [ "$T" = "$CT" ]; then ok=$((ok+1)); else bad=$((bad+1)); echo "RESUME FAIL steps=$steps leave=$leave rc2=$rc2"; fi
  else bad=$((bad+1)); echo "MSG FAIL steps=$steps leave=$leave rc=$rc: $last"; fi
  umount -l $m
done; done
echo "sweep: $ok ok, $bad bad"
