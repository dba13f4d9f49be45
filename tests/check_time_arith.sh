#!/bin/sh
# One checked path to a duration (issue 16), checked: in the library (sim/,
# hardware/, models/; not viz/ or the tests) a double becomes an mp_time only
# through sim/common.h's mp_time_from_ps / mp_time_from_s / mp_time_scale,
# and products of durations go through mp_time_mul, so nothing computed from
# the user's numbers can wrap int64 picoseconds or turn negative. A raw
# "(mp_time)" cast, or an mp_time set from llround(), anywhere else is a way
# around that path.
# Run from the project root; prints each offending line and exits 1 if any.
set -u
hits=$(grep -n '(mp_time)\|mp_time[^;]*= *llround' $(find sim hardware models -name '*.[ch]' | sort) |
       grep -v '^sim/common\.[ch]:' | grep -v '^[^:]*:[0-9]*: *\(/\*\|\*\)')
if [ -n "$hits" ]; then
    echo "$hits" | sed 's/^/time_arith: /'
    echo "time_arith: form durations with mp_time_from_ps / mp_time_add / mp_time_mul / mp_time_scale (sim/common.h)"
    exit 1
fi
echo "time_arith: no unchecked duration arithmetic"
