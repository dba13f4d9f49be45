#!/bin/sh
# cli_mpi.sh — `mpirun -n K mpsim sweep` writes the same bytes as one
# process: K = 2 and 3 (an uneven deal), a serving sweep, --resume from a
# partial file with a torn last line, and a bad --vary that exits 2 saying
# so once. Builds build-mpi/bin/mpsim (`make MPI=1`); skipped, and says so,
# when mpirun is not installed. Not in tests/run_suites: it needs its own
# build. Run from the project root; MPSIM is the single-process reference
# (default bin/mpsim, else the MPI build run without mpirun).
if ! command -v mpirun >/dev/null 2>&1; then
    echo "cli_mpi: skipped (no mpirun: apt-get install openmpi-bin libopenmpi-dev)"
    echo "cli_mpi: 0 passed, 0 failed, 1 skipped"
    exit 0
fi
make --no-print-directory MPI=1 BUILD=build-mpi BIN=build-mpi/bin build-mpi/bin/mpsim >/dev/null ||
    { echo "cli_mpi: FAIL: make MPI=1 did not build"; exit 1; }
P=build-mpi/bin/mpsim
MPSIM=${MPSIM:-bin/mpsim}
[ -x "$MPSIM" ] || MPSIM=$P
T=$(mktemp -d /tmp/mpsim-mpi-XXXXXX)
trap 'rm -rf "$T"' EXIT
pass=0; fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# --oversubscribe: more ranks than this machine's cores; root in CI containers.
run() { n=$1; shift; mpirun --oversubscribe --allow-run-as-root -n "$n" "$P" "$@"; }
S=scenarios/teach-bubbles.ini

# same NAME K ARGS...: one process and K ranks, compared byte for byte.
same() {
    name=$1; n=$2; shift 2
    "$MPSIM" sweep "$@" --out "$T/$name.1.csv" --quiet 2>"$T/err1" ||
        { bad "$name: single process failed"; cat "$T/err1"; return; }
    run "$n" sweep "$@" --out "$T/$name.$n.csv" --quiet 2>"$T/errn" ||
        { bad "$name: mpirun -n $n failed"; cat "$T/errn"; return; }
    if cmp -s "$T/$name.1.csv" "$T/$name.$n.csv" && [ ! -e "$T/$name.$n.csv.partial" ]; then ok
    else bad "$name: -n $n differs from one process"; diff "$T/$name.1.csv" "$T/$name.$n.csv" | head; fi
}
G="$S --vary parallel.pp=1..8*2 --vary training.schedule=gpipe,1f1b,zb-h1 --vary training.global_batch=8..64+8"
same grid 2 $G
[ "$(wc -l <"$T/grid.2.csv")" -eq 97 ] && ok || bad "grid: expected 96 rows"
same uneven 3 $S --vary parallel.pp=1..7 --vary training.schedule=gpipe,1f1b
same serve 2 scenarios/kimi-k3-wafers.ini --set inference.requests=60 --set inference.rate=1000 \
    --vary inference.micro_batch=1..8*2

# --resume under MPI: rank 0 keeps the 40 whole rows of a partial file,
# drops its torn last line, and the ranks run only the other 56 points.
head -n 41 "$T/grid.1.csv" >"$T/res.csv.partial"
sed -n 42p "$T/grid.1.csv" | head -c 20 >>"$T/res.csv.partial"
run 2 sweep $G --out "$T/res.csv" --resume --quiet 2>"$T/err"
grep -qF "(40 resumed, 56 simulated" "$T/err" && ok || { bad "--resume counts"; cat "$T/err"; }
cmp -s "$T/grid.1.csv" "$T/res.csv" && ok || bad "--resume under mpirun differs"

# A bad --vary: exit 2 before any point, the message once (rank 0 speaks).
run 2 sweep $S --vary parallel.ppp=1,2 --out "$T/bad.csv" 2>"$T/err"
rc=$?
if [ $rc -eq 2 ] && [ "$(grep -c "did you mean 'parallel.pp'" "$T/err")" -eq 1 ] &&
   [ ! -e "$T/bad.csv" ] && [ ! -e "$T/bad.csv.partial" ]; then ok
else bad "bad --vary under mpirun (rc $rc, want 2 and one message)"; cat "$T/err"; fi

echo "cli_mpi: $pass passed, $fail failed, 0 skipped"
[ $fail -eq 0 ]
